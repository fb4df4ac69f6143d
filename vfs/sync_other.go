//go:build !linux

package vfs

import "os"

// syncData is a full Sync where the platform has no fdatasync.
func syncData(f *os.File) error { return f.Sync() }

// startWriteback does nothing where the platform has no sync_file_range.
func startWriteback(f *os.File, off, n int64) error { return nil }
