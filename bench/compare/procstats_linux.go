//go:build linux

package main

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// peakRSSKiB is an exited child's peak resident set in KiB (ru_maxrss,
// which Linux counts in KiB), or -1.
func peakRSSKiB(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss
	}
	return -1
}

// storageWriteBytes is write_bytes of /proc/self/io: the bytes this process
// caused to be written to storage so far, or -1 if unreadable.
func storageWriteBytes() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("write_bytes:")); ok {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}
