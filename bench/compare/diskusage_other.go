//go:build !unix

package main

import "io/fs"

// diskUsage is the disk space a file takes; without block counts, its size.
func diskUsage(info fs.FileInfo) int64 { return info.Size() }
