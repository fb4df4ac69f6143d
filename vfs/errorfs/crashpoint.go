package errorfs

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/shaledb/shale/vfs"
)

// Mutation is one operation that changed a file system, as a CrashPointFS
// reports it to its hook.
type Mutation struct {
	// Index counts the mutations from 1, in the order they completed.
	Index int
	// Op is what was done: OpCreate (Create, or MkdirAll with Dir set),
	// OpWrite, OpSync (File.Sync, File.SyncData, or a directory's Sync with
	// Dir set), OpRename, OpRemove (Remove and RemoveAll), OpTruncate or
	// OpLock (Lock creates its file), or OpLink (a hard link: Path the
	// existing name, NewPath the new one).
	Op Op
	// Path is the file or directory operated on; for a rename, the old name.
	Path string
	// NewPath is the new name of a rename.
	NewPath string
	// Dir marks a mutation of a directory: its Sync, or MkdirAll.
	Dir bool
	// Bytes is the length of a write.
	Bytes int
	// Err is the error the operation returned, if any.
	Err error
}

// String describes the mutation for test failure messages, e.g.
// "op 17: rename /db/000012.dbtmp -> /db/CURRENT".
func (m Mutation) String() string {
	var s string
	switch {
	case m.Op == OpRename:
		s = fmt.Sprintf("rename %s -> %s", m.Path, m.NewPath)
	case m.Op == OpLink:
		s = fmt.Sprintf("link %s -> %s", m.Path, m.NewPath)
	case m.Op == OpWrite:
		s = fmt.Sprintf("write %d bytes to %s", m.Bytes, m.Path)
	case m.Op == OpSync && m.Dir:
		s = "sync dir " + m.Path
	case m.Op == OpCreate && m.Dir:
		s = "mkdir " + m.Path
	default:
		s = m.Op.String() + " " + m.Path
	}
	if m.Err != nil {
		s += " (failed: " + m.Err.Error() + ")"
	}
	return fmt.Sprintf("op %d: %s", m.Index, s)
}

// Durable reports whether the mutation can change what survives a power loss
// on vfs.MemFS: a file or directory Sync, or MkdirAll (whose directories MemFS
// makes durable at once). Every other mutation changes only the current,
// volatile state, so a crash right after it leaves what a crash right after
// the previous durable mutation leaves.
func (m Mutation) Durable() bool {
	return m.Err == nil && (m.Op == OpSync || (m.Op == OpCreate && m.Dir))
}

// CrashPointFS wraps a vfs.FS, numbers every operation that changes it and
// calls a hook after each one, so that a test can crash (vfs.MemFS.CrashClone)
// after any chosen operation. Mutations are serialized: the hook runs before
// any other mutation starts, so the state it sees is exactly the state after
// mutation Index. Reads, Open, List, Stat, Preallocate, StartWriteback and
// Close pass through uncounted. The hook must not use the CrashPointFS.
type CrashPointFS struct {
	vfs.FS
	mu   sync.Mutex
	n    int
	hook func(Mutation)
}

// NewCrashPointFS returns a CrashPointFS over fs calling hook (which may be
// nil) after each mutation.
func NewCrashPointFS(fs vfs.FS, hook func(Mutation)) *CrashPointFS {
	return &CrashPointFS{FS: fs, hook: hook}
}

// Mutations returns how many mutations were done so far.
func (c *CrashPointFS) Mutations() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// mutate runs op as mutation m, holding the serialization lock, and reports
// it to the hook.
func (c *CrashPointFS) mutate(m Mutation, op func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m.Err = op()
	c.n++
	m.Index = c.n
	if c.hook != nil {
		c.hook(m)
	}
	return m.Err
}

func (c *CrashPointFS) wrap(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &crashPointFile{File: f, fs: c, path: name}, nil
}

// Create implements vfs.FS; it is a mutation.
func (c *CrashPointFS) Create(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	var f vfs.File
	err := c.mutate(Mutation{Op: OpCreate, Path: name}, func() (err error) {
		f, err = c.FS.Create(name, opts...)
		return err
	})
	return c.wrap(f, name, err)
}

// Open implements vfs.FS; files it opens are wrapped so their mutations count.
func (c *CrashPointFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := c.FS.Open(name, opts...)
	return c.wrap(f, name, err)
}

// OpenReadWrite implements vfs.FS.
func (c *CrashPointFS) OpenReadWrite(name string) (vfs.File, error) {
	f, err := c.FS.OpenReadWrite(name)
	return c.wrap(f, name, err)
}

// OpenDir implements vfs.FS; the directory's Sync is a mutation.
func (c *CrashPointFS) OpenDir(name string) (vfs.File, error) {
	f, err := c.FS.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return &crashPointFile{File: f, fs: c, path: name, dir: true}, nil
}

// Remove implements vfs.FS; it is a mutation.
func (c *CrashPointFS) Remove(name string) error {
	return c.mutate(Mutation{Op: OpRemove, Path: name}, func() error { return c.FS.Remove(name) })
}

// RemoveAll implements vfs.FS; it is a mutation (OpRemove).
func (c *CrashPointFS) RemoveAll(name string) error {
	return c.mutate(Mutation{Op: OpRemove, Path: name}, func() error { return c.FS.RemoveAll(name) })
}

// Rename implements vfs.FS; it is a mutation.
func (c *CrashPointFS) Rename(oldname, newname string) error {
	return c.mutate(Mutation{Op: OpRename, Path: oldname, NewPath: newname},
		func() error { return c.FS.Rename(oldname, newname) })
}

// Link implements vfs.Linker; it is a mutation (OpLink). When the wrapped FS
// cannot link it returns an error wrapping vfs.ErrLinkUnsupported, which
// changes nothing and is no mutation.
func (c *CrashPointFS) Link(oldname, newname string) error {
	l, ok := c.FS.(vfs.Linker)
	if !ok {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: vfs.ErrLinkUnsupported}
	}
	return c.mutate(Mutation{Op: OpLink, Path: oldname, NewPath: newname}, func() error { return l.Link(oldname, newname) })
}

var _ vfs.Linker = (*CrashPointFS)(nil)

// MkdirAll implements vfs.FS; it is a mutation (OpCreate with Dir set).
func (c *CrashPointFS) MkdirAll(dir string, perm os.FileMode) error {
	return c.mutate(Mutation{Op: OpCreate, Path: dir, Dir: true}, func() error { return c.FS.MkdirAll(dir, perm) })
}

// Lock implements vfs.FS; it is a mutation, since it may create the file.
func (c *CrashPointFS) Lock(name string) (io.Closer, error) {
	var l io.Closer
	err := c.mutate(Mutation{Op: OpLock, Path: name}, func() (err error) {
		l, err = c.FS.Lock(name)
		return err
	})
	return l, err
}

// crashPointFile counts its writes, syncs and truncations as mutations.
type crashPointFile struct {
	vfs.File
	fs   *CrashPointFS
	path string
	dir  bool
}

func (f *crashPointFile) Write(p []byte) (n int, err error) {
	err = f.fs.mutate(Mutation{Op: OpWrite, Path: f.path, Bytes: len(p)}, func() (err error) {
		n, err = f.File.Write(p)
		return err
	})
	return n, err
}

// WriteZeros implements vfs.ZeroWriter; it is a mutation (OpWrite).
func (f *crashPointFile) WriteZeros(off, n int64) error {
	return f.fs.mutate(Mutation{Op: OpWrite, Path: f.path, Bytes: int(n)}, func() error { return vfs.WriteZeros(f.File, off, n) })
}

func (f *crashPointFile) Sync() error {
	return f.fs.mutate(Mutation{Op: OpSync, Path: f.path, Dir: f.dir}, f.File.Sync)
}

// SyncData is a mutation like Sync (OpSync).
func (f *crashPointFile) SyncData() error {
	return f.fs.mutate(Mutation{Op: OpSync, Path: f.path, Dir: f.dir}, f.File.SyncData)
}

// Truncate is a mutation (OpTruncate).
func (f *crashPointFile) Truncate(size int64) error {
	return f.fs.mutate(Mutation{Op: OpTruncate, Path: f.path}, func() error { return f.File.Truncate(size) })
}

// Alignment implements vfs.Aligner: the wrapped file's direct-IO alignment.
func (f *crashPointFile) Alignment() int { return vfs.Alignment(f.File) }
