package vfs

// newPlatformAsyncReader returns the io_uring reader, or an error saying why
// the kernel refused one.
func newPlatformAsyncReader(o AsyncOptions) (AsyncReader, error) {
	// TODO(io_uring): the ring lands in uring_linux.go.
	return nil, errNoPlatformAsync
}
