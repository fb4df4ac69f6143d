package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var (
	errNotDir   = errors.New("not a directory")
	errIsDir    = errors.New("is a directory")
	errNotEmpty = errors.New("directory not empty")
	errReadOnly = errors.New("file not open for writing")
	errInvalid  = errors.New("invalid argument")
)

// MemFS is an in-memory FS that models what survives a power loss on a strict
// POSIX file system; see CrashClone. It is safe for concurrent use. Paths use
// '/', are cleaned with path.Clean, and relative paths are taken from "/".
type MemFS struct {
	// mu guards the tree (every directory's entries and durable entries)
	// and the lock table. It is taken before any memNode.mu.
	mu    sync.Mutex
	root  *memNode
	locks map[string]struct{}
}

var _ FS = (*MemFS)(nil)

// memNode is an inode: a directory or a file.
type memNode struct {
	isDir bool

	// Directory state, guarded by MemFS.mu. entries is what List and
	// lookups see; durableEntries is the copy taken at the last sync of
	// the directory, and is what CrashClone keeps.
	entries, durableEntries map[string]*memNode

	// File state, guarded by mu (readers may run while a writer appends).
	mu   sync.RWMutex
	data []byte
	// durable is the content as of the last File.Sync. It aliases data's
	// backing array (durableShared) until a write would change a byte of
	// it, when data is copied: syncing a growing log stays O(1).
	durable       []byte
	durableShared bool
	modTime       time.Time
}

func newMemDir() *memNode {
	return &memNode{isDir: true, entries: map[string]*memNode{}, durableEntries: map[string]*memNode{}, modTime: time.Now()}
}

// NewMem returns an empty in-memory file system holding only the root "/".
func NewMem() *MemFS {
	return &MemFS{root: newMemDir(), locks: map[string]struct{}{}}
}

func memClean(name string) string {
	if !strings.HasPrefix(name, "/") {
		name = "/" + name
	}
	return path.Clean(name)
}

func pathErr(op, name string, err error) error {
	return &os.PathError{Op: op, Path: name, Err: err}
}

// walkLocked returns the node at the cleaned path p.
func (fs *MemFS) walkLocked(op, name, p string) (*memNode, error) {
	n := fs.root
	if p == "/" {
		return n, nil
	}
	for _, c := range strings.Split(p[1:], "/") {
		if !n.isDir {
			return nil, pathErr(op, name, errNotDir)
		}
		n = n.entries[c]
		if n == nil {
			return nil, pathErr(op, name, os.ErrNotExist)
		}
	}
	return n, nil
}

// parentLocked returns the directory holding the cleaned path p, and p's base.
func (fs *MemFS) parentLocked(op, name, p string) (*memNode, string, error) {
	if p == "/" {
		return nil, "", pathErr(op, name, errInvalid)
	}
	dir, err := fs.walkLocked(op, name, path.Dir(p))
	if err != nil {
		return nil, "", err
	}
	if !dir.isDir {
		return nil, "", pathErr(op, name, errNotDir)
	}
	return dir, path.Base(p), nil
}

// Create creates name, or truncates it in place if it exists. The new entry
// is durable only once its directory is synced.
func (fs *MemFS) Create(name string, opts ...OpenOption) (File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.createLocked("create", name, true)
	if err != nil {
		return nil, err
	}
	return &memFile{n: n, name: name, writable: true, direct: openFlags(opts)&DirectIO != 0}, nil
}

func (fs *MemFS) createLocked(op, name string, truncate bool) (*memNode, error) {
	dir, base, err := fs.parentLocked(op, name, memClean(name))
	if err != nil {
		return nil, err
	}
	n := dir.entries[base]
	switch {
	case n == nil:
		n = &memNode{modTime: time.Now()}
		dir.entries[base] = n
	case n.isDir:
		return nil, pathErr(op, name, errIsDir)
	case truncate:
		n.mu.Lock()
		n.truncateLocked(0)
		n.mu.Unlock()
	}
	return n, nil
}

// Open opens name read-only.
func (fs *MemFS) Open(name string, opts ...OpenOption) (File, error) {
	n, err := fs.openFile("open", name)
	if err != nil {
		return nil, err
	}
	return &memFile{n: n, name: name, direct: openFlags(opts)&DirectIO != 0}, nil
}

// OpenReadWrite opens an existing file; Write appends at its end.
func (fs *MemFS) OpenReadWrite(name string) (File, error) {
	n, err := fs.openFile("open", name)
	if err != nil {
		return nil, err
	}
	n.mu.RLock()
	pos := int64(len(n.data))
	n.mu.RUnlock()
	return &memFile{n: n, name: name, writable: true, pos: pos}, nil
}

func (fs *MemFS) openFile(op, name string) (*memNode, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.walkLocked(op, name, memClean(name))
	if err != nil {
		return nil, err
	}
	if n.isDir {
		return nil, pathErr(op, name, errIsDir)
	}
	return n, nil
}

// OpenDir opens a directory; Sync on the result makes its current entries
// durable.
func (fs *MemFS) OpenDir(name string) (File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.dirLocked("opendir", "opendir", name)
	if err != nil {
		return nil, err
	}
	return &memFile{fs: fs, n: n, name: name}, nil
}

// dirLocked returns the directory at name. A missing name is an error of
// op, a name that is not a directory one of notDirOp: os.ReadDir learns
// that only when it reads the entries of what it opened.
func (fs *MemFS) dirLocked(op, notDirOp, name string) (*memNode, error) {
	n, err := fs.walkLocked(op, name, memClean(name))
	if err != nil {
		return nil, err
	}
	if !n.isDir {
		return nil, pathErr(notDirOp, name, errNotDir)
	}
	return n, nil
}

// Remove removes a file or an empty directory from the current entries.
func (fs *MemFS) Remove(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir, base, err := fs.parentLocked("remove", name, memClean(name))
	if err != nil {
		return err
	}
	n := dir.entries[base]
	if n == nil {
		return pathErr("remove", name, os.ErrNotExist)
	}
	if n.isDir && len(n.entries) > 0 {
		return pathErr("remove", name, errNotEmpty)
	}
	delete(dir.entries, base)
	return nil
}

// RemoveAll removes name and everything below it; a missing name is not an
// error.
func (fs *MemFS) RemoveAll(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	p := memClean(name)
	if p == "/" {
		clear(fs.root.entries)
		return nil
	}
	dir, base, err := fs.parentLocked("removeall", name, p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	delete(dir.entries, base)
	return nil
}

// Rename moves oldname to newname, replacing a file (or empty directory) at
// newname. Like Create, it changes only the current entries.
func (fs *MemFS) Rename(oldname, newname string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	op, oldp, newp := "rename", memClean(oldname), memClean(newname)
	oldDir, oldBase, err := fs.parentLocked(op, oldname, oldp)
	if err != nil {
		return err
	}
	n := oldDir.entries[oldBase]
	if n == nil {
		return pathErr(op, oldname, os.ErrNotExist)
	}
	newDir, newBase, err := fs.parentLocked(op, newname, newp)
	if err != nil {
		return err
	}
	if dst := newDir.entries[newBase]; dst != nil {
		switch {
		case dst == n:
			return nil
		case dst.isDir && !n.isDir:
			return pathErr(op, newname, errIsDir)
		case !dst.isDir && n.isDir:
			return pathErr(op, newname, errNotDir)
		case dst.isDir && len(dst.entries) > 0:
			return pathErr(op, newname, errNotEmpty)
		}
	}
	if n.isDir && strings.HasPrefix(newp, oldp+"/") {
		return pathErr(op, newname, errInvalid)
	}
	delete(oldDir.entries, oldBase)
	newDir.entries[newBase] = n
	return nil
}

// MkdirAll creates dir and its parents. Unlike files, new directories are
// durable at once (as if each parent were synced): crash tests are about
// database files, not about the directory that holds them.
func (fs *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	p := memClean(dir)
	n := fs.root
	if p == "/" {
		return nil
	}
	for _, c := range strings.Split(p[1:], "/") {
		child := n.entries[c]
		if child == nil {
			child = newMemDir()
			n.entries[c] = child
			n.durableEntries[c] = child
		} else if !child.isDir {
			return pathErr("mkdir", dir, errNotDir)
		}
		n = child
	}
	return nil
}

// List returns the names in dir, sorted.
func (fs *MemFS) List(dir string) ([]string, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.dirLocked("open", "readdir", dir)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(n.entries)), nil
}

// Stat describes name.
func (fs *MemFS) Stat(name string) (os.FileInfo, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	p := memClean(name)
	n, err := fs.walkLocked("stat", name, p)
	if err != nil {
		return nil, err
	}
	return n.stat(path.Base(p)), nil
}

// Lock creates name if needed and takes it in an in-memory lock table; a
// second Lock of the same path fails with ErrLocked until the first is closed.
func (fs *MemFS) Lock(name string) (io.Closer, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	p := memClean(name)
	if _, ok := fs.locks[p]; ok {
		return nil, lockedError(name)
	}
	if _, err := fs.createLocked("lock", name, false); err != nil {
		return nil, err
	}
	fs.locks[p] = struct{}{}
	return &memLock{fs: fs, path: p}, nil
}

// PathJoin joins elements with '/'.
func (fs *MemFS) PathJoin(elem ...string) string { return path.Join(elem...) }

// PathBase returns the last element of p.
func (fs *MemFS) PathBase(p string) string { return path.Base(p) }

// PathDir returns all but the last element of p.
func (fs *MemFS) PathDir(p string) string { return path.Dir(p) }

// CrashClone returns a new MemFS holding what would survive a power loss now:
// each directory's durable entries, each file with the data of its last Sync.
// No locks are held in the clone; fs itself is unchanged and stays usable.
func (fs *MemFS) CrashClone() *MemFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	// Inodes reachable by several names stay shared in the clone.
	seen := make(map[*memNode]*memNode)
	return &MemFS{root: crashCopy(fs.root, seen), locks: map[string]struct{}{}}
}

func crashCopy(n *memNode, seen map[*memNode]*memNode) *memNode {
	if c := seen[n]; c != nil {
		return c
	}
	if n.isDir {
		c := newMemDir()
		c.modTime = n.modTime
		seen[n] = c
		for name, child := range n.durableEntries {
			cc := crashCopy(child, seen)
			c.entries[name] = cc
			c.durableEntries[name] = cc
		}
		return c
	}
	n.mu.RLock()
	data := bytes.Clone(n.durable)
	c := &memNode{data: data, durable: data, durableShared: true, modTime: n.modTime}
	n.mu.RUnlock()
	seen[n] = c
	return c
}

// String lists every directory and file with its size and synced size, and
// marks entries not yet durable and durable entries already removed. It is
// meant for test failure messages.
func (fs *MemFS) String() string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var b strings.Builder
	b.WriteString("/\n")
	describeDir(&b, fs.root, 1)
	return b.String()
}

func describeDir(b *strings.Builder, dir *memNode, depth int) {
	names := slices.Collect(maps.Keys(dir.entries))
	for name := range dir.durableEntries {
		if dir.entries[name] == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	indent := strings.Repeat("  ", depth)
	for _, name := range names {
		n, durable := dir.entries[name], dir.durableEntries[name]
		note := ""
		switch {
		case n == nil:
			n, note = durable, "  [removed; entry still durable]"
		case durable != n:
			note = "  [entry not synced]"
		}
		if n.isDir {
			fmt.Fprintf(b, "%s%s/%s\n", indent, name, note)
			describeDir(b, n, depth+1)
			continue
		}
		n.mu.RLock()
		size, synced := len(n.data), len(n.durable)
		n.mu.RUnlock()
		fmt.Fprintf(b, "%s%s  size=%d synced=%d%s\n", indent, name, size, synced, note)
	}
}

// stat describes n under the base name.
func (n *memNode) stat(name string) os.FileInfo {
	if n.isDir {
		return &memFileInfo{name: name, mode: os.ModeDir | 0o755, modTime: n.modTime}
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	return &memFileInfo{name: name, size: int64(len(n.data)), mode: 0o644, modTime: n.modTime}
}

// unshareLocked copies data before a write that starts at start, if the
// write would change a byte that durable still shares.
func (n *memNode) unshareLocked(start int64) {
	if n.durableShared && start < int64(len(n.durable)) {
		n.data = append(make([]byte, 0, cap(n.data)), n.data...)
		n.durableShared = false
	}
}

// writeAtLocked writes p at off, zero-filling any gap past the end.
func (n *memNode) writeAtLocked(p []byte, off int64) {
	old := int64(len(n.data))
	n.unshareLocked(min(off, old))
	if end := off + int64(len(p)); end > old {
		n.data = slices.Grow(n.data, int(end-old))[:end]
		if off > old {
			// The grown region may hold stale bytes from before a truncate.
			clear(n.data[old:off])
		}
	}
	copy(n.data[off:], p)
	n.modTime = time.Now()
}

func (n *memNode) truncateLocked(size int64) {
	old := int64(len(n.data))
	if size <= old {
		n.data = n.data[:size]
	} else {
		n.unshareLocked(old)
		n.data = slices.Grow(n.data, int(size-old))[:size]
		clear(n.data[old:])
	}
	n.modTime = time.Now()
}

// memFile is a handle on a memNode. For a directory handle, fs is set and
// only Sync and Close work.
type memFile struct {
	fs       *MemFS
	n        *memNode
	name     string
	writable bool
	// direct marks a file opened with DirectIO: it reports memDirectAlign
	// to Alignment, so that callers' aligned-buffer paths run in memory
	// tests, while reads and writes of any shape still work.
	direct bool
	pos    int64 // where Write writes next; guarded by n.mu
	closed atomic.Bool
}

var _ File = (*memFile)(nil)

// memDirectAlign is the alignment a MemFS file opened with DirectIO reports:
// the smallest logical block size of real devices.
const memDirectAlign = 512

// Alignment implements Aligner: memDirectAlign with DirectIO, else 1.
func (f *memFile) Alignment() int {
	if f.direct {
		return memDirectAlign
	}
	return 1
}

func (f *memFile) check(op string, write bool) error {
	switch {
	case f.closed.Load():
		return pathErr(op, f.name, os.ErrClosed)
	case f.n.isDir:
		return pathErr(op, f.name, errIsDir)
	case write && !f.writable:
		return pathErr(op, f.name, errReadOnly)
	}
	return nil
}

func (f *memFile) Close() error {
	if f.closed.Swap(true) {
		return pathErr("close", f.name, os.ErrClosed)
	}
	return nil
}

// MapReadOnly returns a copy of the file's first size bytes standing for a
// mapping, and an unmap that poisons the copy (fills it with 0xdb), so that
// a read after unmap shows as damaged data in tests, as it would fault with
// a real mapping. Changes made to the file after the call do not show.
func (f *memFile) MapReadOnly(size int64) ([]byte, func() error, error) {
	if err := f.check("mmap", false); err != nil {
		return nil, nil, err
	}
	f.n.mu.RLock()
	defer f.n.mu.RUnlock()
	if int64(len(f.n.data)) < size {
		return nil, nil, fmt.Errorf("shale: mapping %d bytes of %s, which has %d", size, f.name, len(f.n.data))
	}
	data := append([]byte(nil), f.n.data[:size]...)
	unmap := func() error {
		for i := range data {
			data[i] = 0xdb
		}
		return nil
	}
	return data, unmap, nil
}

// ReadAt reads like os.File.ReadAt: a read that ends past EOF returns the
// bytes there are and io.EOF.
func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("read", f.name, errInvalid)
	}
	if len(p) == 0 {
		return 0, nil // as os.File.ReadAt, even at or past the end
	}
	f.n.mu.RLock()
	defer f.n.mu.RUnlock()
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	k := copy(p, f.n.data[off:])
	if k < len(p) {
		return k, io.EOF
	}
	return k, nil
}

// Write writes at the handle's position, like os.File: it starts at 0 after
// Create and at the end after OpenReadWrite, and Truncate does not move it.
func (f *memFile) Write(p []byte) (int, error) {
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	f.n.mu.Lock()
	f.n.writeAtLocked(p, f.pos)
	f.pos += int64(len(p))
	f.n.mu.Unlock()
	return len(p), nil
}

// WriteZeros implements ZeroWriter: zeros at off, the handle's position
// unchanged. Like every write, they are not durable until a sync.
func (f *memFile) WriteZeros(off, n int64) error {
	if err := f.check("write", true); err != nil {
		return err
	}
	if off < 0 || n < 0 {
		return pathErr("write", f.name, errInvalid)
	}
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	return writeZerosWith(func(p []byte, at int64) (int, error) {
		f.n.writeAtLocked(p, at)
		return len(p), nil
	}, off, n)
}

// Sync makes the file's data durable or, on a directory handle, the
// directory's current entries.
func (f *memFile) Sync() error {
	if f.closed.Load() {
		return pathErr("sync", f.name, os.ErrClosed)
	}
	if f.n.isDir {
		f.fs.mu.Lock()
		f.n.durableEntries = maps.Clone(f.n.entries)
		f.fs.mu.Unlock()
		return nil
	}
	f.n.mu.Lock()
	f.n.durable = f.n.data[:len(f.n.data):len(f.n.data)]
	f.n.durableShared = true
	f.n.mu.Unlock()
	return nil
}

// SyncData is Sync: MemFS keeps no metadata apart from data.
func (f *memFile) SyncData() error { return f.Sync() }

// StartWriteback does nothing beyond checking the handle.
func (f *memFile) StartWriteback(off, n int64) error { return f.check("writeback", true) }

func (f *memFile) Size() (int64, error) {
	if err := f.check("size", false); err != nil {
		return 0, err
	}
	f.n.mu.RLock()
	defer f.n.mu.RUnlock()
	return int64(len(f.n.data)), nil
}

// Preallocate does nothing: memory is not reserved ahead.
func (f *memFile) Preallocate(off, n int64) error { return f.check("preallocate", true) }

func (f *memFile) Truncate(size int64) error {
	if err := f.check("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", f.name, errInvalid)
	}
	f.n.mu.Lock()
	f.n.truncateLocked(size)
	f.n.mu.Unlock()
	return nil
}

// memLock is the Closer MemFS.Lock returns.
type memLock struct {
	fs     *MemFS
	path   string
	closed atomic.Bool
}

func (l *memLock) Close() error {
	if l.closed.Swap(true) {
		return fmt.Errorf("shale: lock %s: %w", l.path, os.ErrClosed)
	}
	l.fs.mu.Lock()
	delete(l.fs.locks, l.path)
	l.fs.mu.Unlock()
	return nil
}

// memFileInfo implements os.FileInfo for MemFS.
type memFileInfo struct {
	name    string
	size    int64
	mode    os.FileMode
	modTime time.Time
}

func (fi *memFileInfo) Name() string       { return fi.name }
func (fi *memFileInfo) Size() int64        { return fi.size }
func (fi *memFileInfo) Mode() os.FileMode  { return fi.mode }
func (fi *memFileInfo) ModTime() time.Time { return fi.modTime }
func (fi *memFileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi *memFileInfo) Sys() any           { return nil }
