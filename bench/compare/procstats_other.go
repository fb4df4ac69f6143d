//go:build !linux

package main

import "os"

// peakRSSKiB is unknown (-1) here: ru_maxrss is in KiB on Linux only.
func peakRSSKiB(*os.ProcessState) int64 { return -1 }

// storageWriteBytes is unknown (-1) without Linux's /proc/self/io.
func storageWriteBytes() int64 { return -1 }
