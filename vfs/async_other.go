//go:build !linux

package vfs

// newPlatformAsyncReader has no native implementation here; NewAsyncReader
// uses the portable reader.
func newPlatformAsyncReader(AsyncOptions) (AsyncReader, error) { return nil, errNoPlatformAsync }
