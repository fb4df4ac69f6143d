package vfs

import (
	"errors"
	"testing"
)

// TestWindowsLockFileExExcludesHandles takes the OS lock twice for one path
// past the process registry: LockFileEx of a second handle must fail with
// ErrLocked, and succeed once the first lock is released.
func TestWindowsLockFileExExcludesHandles(t *testing.T) {
	name := Default.PathJoin(testDir(t), "LOCK")
	first, err := platformLock(name)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := platformLock(name); !errors.Is(err, ErrLocked) {
		if err == nil {
			f.Close()
		}
		t.Fatalf("second LockFileEx of a held lock: %v, want ErrLocked", err)
	}
	if err := platformUnlock(first); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, err := platformLock(name)
	if err != nil {
		t.Fatalf("LockFileEx after release: %v", err)
	}
	platformUnlock(second)
	second.Close()
	// Through the FS: a second Lock fails while the first is held.
	l, err := Default.Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Default.Lock(name); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock: %v, want ErrLocked", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err == nil {
		t.Fatal("second Close of a lock succeeded")
	}
}
