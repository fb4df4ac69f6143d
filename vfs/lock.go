package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// ErrLocked is wrapped by the error Lock returns when the lock is held; the
// message names the path.
var ErrLocked = errors.New("shale: lock held by another process or another DB in this process")

// heldLocks is the process-wide registry of paths locked through Default.
// Operating system locks do not reliably exclude the same process (fcntl locks
// are per process, and closing any descriptor of the file drops them), so a
// second Lock of a path in this process is refused here on every platform.
var heldLocks struct {
	sync.Mutex
	paths map[string]struct{}
}

// lockKey returns the registry key of name: its absolute, cleaned path.
func lockKey(name string) (string, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return "", err
	}
	return normalizeLockKey(filepath.Clean(abs)), nil
}

func lockedError(name string) error {
	return fmt.Errorf("shale: cannot lock %s: %w", name, ErrLocked)
}

// lockOSFile registers name in the process registry, then takes the OS lock
// (platformLock in lock_*.go).
func lockOSFile(name string) (io.Closer, error) {
	key, err := lockKey(name)
	if err != nil {
		return nil, err
	}
	heldLocks.Lock()
	if _, ok := heldLocks.paths[key]; ok {
		heldLocks.Unlock()
		return nil, lockedError(name)
	}
	if heldLocks.paths == nil {
		heldLocks.paths = make(map[string]struct{})
	}
	heldLocks.paths[key] = struct{}{}
	heldLocks.Unlock()

	f, err := platformLock(name)
	if err != nil {
		forgetLock(key)
		return nil, err
	}
	return &osLock{key: key, file: f}, nil
}

func forgetLock(key string) {
	heldLocks.Lock()
	delete(heldLocks.paths, key)
	heldLocks.Unlock()
}

// osLock is the Closer Lock returns for the OS file system.
type osLock struct {
	mu   sync.Mutex
	key  string
	file *os.File // nil once closed
}

// Close releases the OS lock (closing the file releases it on every
// platform), closes the file and forgets the path.
func (l *osLock) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		return fmt.Errorf("shale: lock %s: %w", l.key, os.ErrClosed)
	}
	err := platformUnlock(l.file)
	if cerr := l.file.Close(); err == nil {
		err = cerr
	}
	l.file = nil
	forgetLock(l.key)
	return err
}
