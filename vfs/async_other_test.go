//go:build !linux

package vfs

// platformAsyncTestReaders: no native reader outside Linux yet.
func platformAsyncTestReaders() []asyncTestReader { return nil }

// evictRange cannot drop pages from the cache here.
func evictRange(f File, off, n int64) bool { return false }
