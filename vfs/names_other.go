//go:build !windows

package vfs

import "os"

// renameFile is rename(2), which replaces newname atomically.
func renameFile(oldname, newname string) error { return os.Rename(oldname, newname) }

// removeFile is unlink(2) (or rmdir for an empty directory).
func removeFile(name string) error { return os.Remove(name) }

// removeAll removes a directory tree.
func removeAll(name string) error { return os.RemoveAll(name) }

// listHidden returns names unchanged: only Windows hides names in listings.
func listHidden(names []string) []string { return names }
