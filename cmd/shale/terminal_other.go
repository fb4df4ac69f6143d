//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || windows)

package main

// isTerminal reports false: this platform's terminals are not detected, so
// no progress is drawn.
func isTerminal(uintptr) bool { return false }
