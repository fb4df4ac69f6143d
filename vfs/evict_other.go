//go:build !linux

package vfs

// DropCache would evict the OS file name from the page cache; outside
// Linux there is no per-file eviction call, so it does nothing and returns
// nil. Benchmarks that rely on a cold cache say so in their output.
func DropCache(name string) error { return nil }
