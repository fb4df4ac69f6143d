package vfs

import (
	"errors"
	"os"
	"strings"

	"golang.org/x/sys/windows"
)

// platformLock opens (creating) name with the same sharing flags as every
// other file and takes an exclusive LockFileEx lock on its first byte,
// failing at once if another handle holds it.
func platformLock(name string) (*os.File, error) {
	f, err := openOSFile(name, os.O_RDWR|os.O_CREATE, 0)
	if err != nil {
		return nil, err
	}
	var ol windows.Overlapped
	err = windows.LockFileEx(windows.Handle(f.file.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if err != nil {
		_ = f.Close()
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			return nil, lockedError(name)
		}
		return nil, &os.PathError{Op: "LockFileEx", Path: name, Err: err}
	}
	return f.file, nil
}

func platformUnlock(f *os.File) error {
	var ol windows.Overlapped
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}

// normalizeLockKey folds case: NTFS names are case-insensitive, so C:\DB and
// c:\db are the same lock.
func normalizeLockKey(key string) string { return strings.ToLower(key) }
