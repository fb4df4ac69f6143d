//go:build !linux

package vfs

// platformAsyncTestReaders: no native reader outside Linux yet.
func platformAsyncTestReaders() []asyncTestReader { return nil }
