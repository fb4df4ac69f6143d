package errorfs

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"

	"github.com/shaledb/shale/vfs"
)

// ErrInjected is the error an FS returns for an injected failure (wrapped
// with the operation and path; a rule may ask for ENOSPC instead).
var ErrInjected = errors.New("shale: injected fault")

// Op names an operation an FS can fail (and a CrashPointFS reports).
type Op int

// The operations a fault rule can match.
const (
	OpRead Op = iota
	OpWrite
	OpSync
	OpCreate
	OpOpen
	OpRename
	OpRemove
	OpLock
	OpList
	// OpTruncate is File.Truncate.
	OpTruncate
	// OpPreallocate is File.Preallocate (with NoSpace: a full disk found
	// by fallocate).
	OpPreallocate
	// OpStartWriteback is File.StartWriteback (sync_file_range).
	OpStartWriteback
	// OpLink is vfs.Linker's Link (a hard link), matched on the new name.
	OpLink
	numOps
)

var opNames = [...]string{"read", "write", "sync", "create", "open", "rename", "remove", "lock", "list",
	"truncate", "preallocate", "startwriteback", "link"}

func (o Op) String() string {
	if o >= 0 && o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", int(o))
}

// Rule fails the operations it matches. A rule matches an operation of
// kind Op on a path containing PathContains (empty: every path) whose base
// name matches the glob PathPattern (path.Match syntax, e.g. "*.sst" or
// "MANIFEST-*"; empty: every name; a malformed pattern matches nothing); it
// then fails the Nth match (1-based; 0: every match from the first), or,
// when Probability > 0, each match with that probability. A rule counts
// every operation it matches, also those another rule fails; each
// probabilistic rule draws from its own generator, seeded from the
// FS's seed and the rule's place in the order of AddRule calls, so
// whether its k-th match fails does not depend on other operations.
//
// Which operations count as which Op: Read is File.ReadAt; Write is
// File.Write; Sync is File.Sync, File.SyncData and the Sync of a directory
// from OpenDir; Create is FS.Create; Open is FS.Open, OpenReadWrite and
// OpenDir; Rename is FS.Rename, matched on the new name; Remove is FS.Remove
// and RemoveAll; Lock is FS.Lock; List is FS.List; Truncate, Preallocate and
// StartWriteback are the File methods of those names; Link is vfs.Linker's
// Link, matched on the new name.
type Rule struct {
	Op           Op
	PathContains string
	PathPattern  string
	Nth          int
	Probability  float64
	// NoSpace makes the failure ENOSPC (a full disk) instead of ErrInjected.
	NoSpace bool
	// ShortWrite makes a failing write first write half of its bytes (a
	// torn write), then report the error.
	ShortWrite bool

	matches int
	rng     *rand.Rand // for Probability; set by AddRule
}

// FS wraps a vfs.FS and fails chosen operations, for tests of how shale
// handles IO errors. It is safe for concurrent use; rules can be changed
// while files are open.
type FS struct {
	vfs.FS
	mu       sync.Mutex
	rules    []*Rule
	seed     uint64
	added    uint64 // AddRule calls so far: the next rule's stream
	injected int
}

// New returns an FS over fs, with no rules; seed drives the probabilistic
// rules.
func New(fs vfs.FS, seed uint64) *FS {
	return &FS{FS: fs, seed: seed}
}

// AddRule adds a rule; it applies to operations from now on.
func (f *FS) AddRule(r Rule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r.matches = 0
	r.rng = rand.New(rand.NewPCG(f.seed, f.added^0x5eed))
	f.added++
	f.rules = append(f.rules, &r)
}

// ClearRules removes every rule: later operations succeed (unless the
// underlying FS fails).
func (f *FS) ClearRules() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
}

// Injected returns how many failures were injected so far.
func (f *FS) Injected() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected
}

// check returns the first rule that fails (op, path), or nil. Every
// matching rule counts the operation (and draws its random number), even
// after an earlier rule has failed it, so each rule's count is its own.
func (f *FS) check(op Op, path string) *Rule {
	f.mu.Lock()
	defer f.mu.Unlock()
	var failed *Rule
	for _, r := range f.rules {
		if r.Op != op || !r.matchesPath(f.FS, path) {
			continue
		}
		r.matches++
		fail := false
		switch {
		case r.Probability > 0:
			fail = r.rng.Float64() < r.Probability
		case r.Nth == 0:
			fail = true
		default:
			fail = r.matches == r.Nth
		}
		if fail && failed == nil {
			failed = r
		}
	}
	if failed != nil {
		f.injected++
	}
	return failed
}

// matchesPath reports whether name passes the rule's path filters.
func (r *Rule) matchesPath(fs vfs.FS, name string) bool {
	if !strings.Contains(name, r.PathContains) {
		return false
	}
	if r.PathPattern == "" {
		return true
	}
	ok, err := path.Match(r.PathPattern, fs.PathBase(name))
	return ok && err == nil
}

func faultError(r *Rule, op Op, path string) error {
	err := ErrInjected
	if r.NoSpace {
		err = syscall.ENOSPC
	}
	return &os.PathError{Op: op.String(), Path: path, Err: err}
}

func (f *FS) fail(op Op, path string) error {
	if r := f.check(op, path); r != nil {
		return faultError(r, op, path)
	}
	return nil
}

func (f *FS) wrap(file vfs.File, path string, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, path: path}, nil
}

// Create implements vfs.FS.
func (f *FS) Create(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	if err := f.fail(OpCreate, name); err != nil {
		return nil, err
	}
	file, err := f.FS.Create(name, opts...)
	return f.wrap(file, name, err)
}

// Open implements vfs.FS.
func (f *FS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	if err := f.fail(OpOpen, name); err != nil {
		return nil, err
	}
	file, err := f.FS.Open(name, opts...)
	return f.wrap(file, name, err)
}

// OpenReadWrite implements vfs.FS.
func (f *FS) OpenReadWrite(name string) (vfs.File, error) {
	if err := f.fail(OpOpen, name); err != nil {
		return nil, err
	}
	file, err := f.FS.OpenReadWrite(name)
	return f.wrap(file, name, err)
}

// OpenDir implements vfs.FS; the directory's Sync can be failed with OpSync.
func (f *FS) OpenDir(name string) (vfs.File, error) {
	if err := f.fail(OpOpen, name); err != nil {
		return nil, err
	}
	file, err := f.FS.OpenDir(name)
	return f.wrap(file, name, err)
}

// Remove implements vfs.FS.
func (f *FS) Remove(name string) error {
	if err := f.fail(OpRemove, name); err != nil {
		return err
	}
	return f.FS.Remove(name)
}

// RemoveAll implements vfs.FS; it fails by the OpRemove rules.
func (f *FS) RemoveAll(name string) error {
	if err := f.fail(OpRemove, name); err != nil {
		return err
	}
	return f.FS.RemoveAll(name)
}

// Rename implements vfs.FS.
func (f *FS) Rename(oldname, newname string) error {
	if err := f.fail(OpRename, newname); err != nil {
		return err
	}
	return f.FS.Rename(oldname, newname)
}

// Link implements vfs.Linker: it fails by the OpLink rules, else links
// through the wrapped FS, or returns an error wrapping vfs.ErrLinkUnsupported
// when that FS cannot link (vfs.LinkOrCopy then copies).
func (f *FS) Link(oldname, newname string) error {
	if err := f.fail(OpLink, newname); err != nil {
		return err
	}
	l, ok := f.FS.(vfs.Linker)
	if !ok {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: vfs.ErrLinkUnsupported}
	}
	return l.Link(oldname, newname)
}

var _ vfs.Linker = (*FS)(nil)

// List implements vfs.FS.
func (f *FS) List(dir string) ([]string, error) {
	if err := f.fail(OpList, dir); err != nil {
		return nil, err
	}
	return f.FS.List(dir)
}

// Lock implements vfs.FS.
func (f *FS) Lock(name string) (io.Closer, error) {
	if err := f.fail(OpLock, name); err != nil {
		return nil, err
	}
	return f.FS.Lock(name)
}

// faultFile fails reads, writes, syncs, truncations, preallocations and
// writeback requests by its FS's rules. It deliberately offers no way to
// reach the file it wraps: an AsyncReader reads it through ReadAt, so async
// reads see the injected read faults too.
type faultFile struct {
	vfs.File
	fs   *FS
	path string
}

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.fail(OpRead, f.path); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *faultFile) Write(p []byte) (int, error) {
	if r := f.fs.check(OpWrite, f.path); r != nil {
		n := 0
		if r.ShortWrite && len(p) > 1 {
			n, _ = f.File.Write(p[:len(p)/2])
		}
		return n, faultError(r, OpWrite, f.path)
	}
	return f.File.Write(p)
}

// WriteZeros implements vfs.ZeroWriter; it fails by the OpWrite rules.
func (f *faultFile) WriteZeros(off, n int64) error {
	if r := f.fs.check(OpWrite, f.path); r != nil {
		return faultError(r, OpWrite, f.path)
	}
	return vfs.WriteZeros(f.File, off, n)
}

func (f *faultFile) Sync() error {
	if err := f.fs.fail(OpSync, f.path); err != nil {
		return err
	}
	return f.File.Sync()
}

// SyncData fails by the OpSync rules, like Sync.
func (f *faultFile) SyncData() error {
	if err := f.fs.fail(OpSync, f.path); err != nil {
		return err
	}
	return f.File.SyncData()
}

// Alignment implements vfs.Aligner: the wrapped file's direct-IO alignment.
func (f *faultFile) Alignment() int { return vfs.Alignment(f.File) }

// Truncate fails by the OpTruncate rules.
func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.fail(OpTruncate, f.path); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

// Preallocate fails by the OpPreallocate rules (ENOSPC with NoSpace).
func (f *faultFile) Preallocate(off, n int64) error {
	if err := f.fs.fail(OpPreallocate, f.path); err != nil {
		return err
	}
	return f.File.Preallocate(off, n)
}

// StartWriteback fails by the OpStartWriteback rules.
func (f *faultFile) StartWriteback(off, n int64) error {
	if err := f.fs.fail(OpStartWriteback, f.path); err != nil {
		return err
	}
	return f.File.StartWriteback(off, n)
}
