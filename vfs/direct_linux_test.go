package vfs

import "os"

// directOpenErrorForTest maps err as a failed open(O_DIRECT) of name would be.
func directOpenErrorForTest(name string, err error) error {
	return directOpenError(name, &os.PathError{Op: "open", Path: name, Err: err})
}
