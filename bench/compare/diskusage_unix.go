//go:build unix

package main

import (
	"io/fs"
	"syscall"
)

// diskUsage is the disk space a file takes: its allocated 512-byte blocks.
func diskUsage(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}
