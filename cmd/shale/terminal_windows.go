package main

import "golang.org/x/sys/windows"

// isTerminal reports whether fd is a console: one whose console mode can
// be read.
func isTerminal(fd uintptr) bool {
	var mode uint32
	return windows.GetConsoleMode(windows.Handle(fd), &mode) == nil
}
