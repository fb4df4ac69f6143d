package raftstore

import (
	"archive/tar"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
	"github.com/shaledb/shale"
	"github.com/shaledb/shale/vfs"
)

// Command kinds, the byte after the version in an encoded command.
const (
	commandVersion = 1
	commandPut     = 1
	commandDelete  = 2
)

// ErrBadCommand is what FSM.Apply returns (as the entry's response) for a
// command it cannot decode; the FSM is left unchanged.
var ErrBadCommand = errors.New("shale: raftstore: malformed command")

// EncodePut returns the command that sets key to value, for raft.Apply.
//
// Layout: version (1) | kind (1 = put) | uvarint len(key) | key | value.
func EncodePut(key, value []byte) []byte {
	b := make([]byte, 0, 2+binary.MaxVarintLen32+len(key)+len(value))
	b = append(b, commandVersion, commandPut)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	return append(b, value...)
}

// EncodeDelete returns the command that deletes key, for raft.Apply.
//
// Layout: version (1) | kind (2 = delete) | uvarint len(key) | key.
func EncodeDelete(key []byte) []byte {
	b := make([]byte, 0, 2+binary.MaxVarintLen32+len(key))
	b = append(b, commandVersion, commandDelete)
	b = binary.AppendUvarint(b, uint64(len(key)))
	return append(b, key...)
}

// decodeCommand splits an encoded command.
func decodeCommand(cmd []byte) (kind byte, key, value []byte, err error) {
	if len(cmd) < 2 || cmd[0] != commandVersion {
		return 0, nil, nil, fmt.Errorf("%w: bad header", ErrBadCommand)
	}
	kind = cmd[1]
	n, w := binary.Uvarint(cmd[2:])
	if w <= 0 || n > uint64(len(cmd)-2-w) {
		return 0, nil, nil, fmt.Errorf("%w: bad key length", ErrBadCommand)
	}
	rest := cmd[2+w:]
	key, value = rest[:n], rest[n:]
	switch kind {
	case commandPut:
	case commandDelete:
		if len(value) != 0 {
			return 0, nil, nil, fmt.Errorf("%w: a delete with a value", ErrBadCommand)
		}
	default:
		return 0, nil, nil, fmt.Errorf("%w: unknown kind %d", ErrBadCommand, kind)
	}
	return kind, key, value, nil
}

// FSMOptions configure an FSM. A nil *FSMOptions is the zero value.
type FSMOptions struct {
	// DB is the shale.Options the FSM's DB is opened with; its FS is where
	// the FSM's directory lives. Default nil: shale's defaults (the OS).
	DB *shale.Options
}

// Names in an FSM's directory.
const (
	fsmLive     = "db"         // the DB the FSM serves
	fsmRestore  = "db.restore" // a snapshot being unpacked by Restore
	fsmOld      = "db.old"     // the previous DB while Restore swaps
	fsmSnapBase = "snapshot-"  // checkpoints held by unreleased snapshots
)

// FSM is a raft.FSM holding a key-value map in a shale DB. Apply writes put
// and delete commands (EncodePut, EncodeDelete) without syncing: raft's log
// is the durable record, and raft rebuilds the FSM after a restart from its
// latest snapshot and the log after it. Snapshot is a DB.Checkpoint,
// streamed by Persist as a tar archive of its files; Restore unpacks such
// an archive into a new DB directory and swaps it in.
type FSM struct {
	fs      vfs.FS
	dir     string
	dbOpts  shale.Options
	snapSeq atomic.Uint64
	// restores counts successful Restore calls since open.
	restores atomic.Uint64

	// mu guards db: Apply and reads take it shared, Restore exclusive.
	mu sync.RWMutex
	db *shale.DB
}

var _ raft.FSM = (*FSM)(nil)

// OpenFSM opens (creating it if needed) an FSM in directory dir. It first
// finishes or rolls back a Restore that a crash interrupted (see Restore)
// and removes leftover snapshot checkpoints.
func OpenFSM(dir string, opts *FSMOptions) (*FSM, error) {
	if opts == nil {
		opts = &FSMOptions{}
	}
	f := &FSM{dir: dir}
	if opts.DB != nil {
		f.dbOpts = *opts.DB
	}
	f.dbOpts.CreateIfMissing = true
	f.fs = f.dbOpts.FS
	if f.fs == nil {
		f.fs = vfs.Default
	}
	if err := f.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("shale: raftstore: FSM directory %s: %w", dir, err)
	}
	if err := f.recoverSwap(); err != nil {
		return nil, err
	}
	db, err := shale.Open(f.path(fsmLive), &f.dbOpts)
	if err != nil {
		return nil, fmt.Errorf("shale: raftstore: open FSM DB: %w", err)
	}
	f.db = db
	return f, nil
}

func (f *FSM) path(name string) string { return f.fs.PathJoin(f.dir, name) }

func (f *FSM) exists(name string) bool {
	_, err := f.fs.Stat(f.path(name))
	return err == nil
}

// recoverSwap finishes an interrupted Restore. Restore renames db to db.old
// only once db.restore is complete and synced, so db missing with both
// db.old and db.restore present means the restore was whole: db.restore
// becomes db. db missing with only db.old means the reverse; db.old comes
// back. Then db.restore, db.old and snapshot checkpoints are removed.
func (f *FSM) recoverSwap() error {
	if !f.exists(fsmLive) {
		switch {
		case f.exists(fsmOld) && f.exists(fsmRestore):
			if err := f.fs.Rename(f.path(fsmRestore), f.path(fsmLive)); err != nil {
				return fmt.Errorf("shale: raftstore: finish interrupted restore: %w", err)
			}
		case f.exists(fsmOld):
			if err := f.fs.Rename(f.path(fsmOld), f.path(fsmLive)); err != nil {
				return fmt.Errorf("shale: raftstore: roll back interrupted restore: %w", err)
			}
		}
	}
	names, err := f.fs.List(f.dir)
	if err != nil {
		return fmt.Errorf("shale: raftstore: list FSM directory: %w", err)
	}
	for _, n := range names {
		if n == fsmRestore || n == fsmOld || strings.HasPrefix(n, fsmSnapBase) {
			if err := f.fs.RemoveAll(f.path(n)); err != nil {
				return fmt.Errorf("shale: raftstore: remove %s: %w", n, err)
			}
		}
	}
	return syncDir(f.fs, f.dir)
}

// syncDir makes the entries of dir durable.
func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Restores returns how many snapshots Restore installed since open.
func (f *FSM) Restores() uint64 { return f.restores.Load() }

// Close closes the FSM's DB.
func (f *FSM) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.db.Close()
}

// Apply applies one committed command. It returns nil, or an error (as the
// raft.ApplyFuture's response) for a malformed command or a failed write.
func (f *FSM) Apply(l *raft.Log) interface{} {
	if l.Type != raft.LogCommand {
		return nil
	}
	kind, key, value, err := decodeCommand(l.Data)
	if err != nil {
		return fmt.Errorf("log entry %d: %w", l.Index, err)
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if kind == commandPut {
		err = f.db.Put(key, value, nil)
	} else {
		err = f.db.Delete(key, nil)
	}
	if err != nil {
		return fmt.Errorf("shale: raftstore: apply log entry %d: %w", l.Index, err)
	}
	return nil
}

// Get returns the value of key in the FSM (shale.ErrNotFound when absent):
// a local read, as fresh as the entries this node applied.
func (f *FSM) Get(key []byte) ([]byte, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.db.Get(key, nil)
}

// KV is one key and value returned by Scan.
type KV struct {
	Key, Value []byte
}

// Scan returns up to limit pairs with from <= key < to in key order (a nil
// to has no bound; limit <= 0 is no limit), a local read like Get.
func (f *FSM) Scan(from, to []byte, limit int) ([]KV, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	it := f.db.NewIterator(&shale.ReadOptions{LowerBound: from, UpperBound: to})
	var out []KV
	for ok := it.First(); ok && (limit <= 0 || len(out) < limit); ok = it.Next() {
		out = append(out, KV{Key: slices.Clone(it.Key()), Value: slices.Clone(it.Value())})
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	return out, nil
}

// Snapshot checkpoints the DB (cheap: tables are hard-linked) into a
// directory that the returned snapshot streams and then removes.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	name := fsmSnapBase + strconv.FormatUint(f.snapSeq.Add(1), 10)
	dir := f.path(name)
	if err := f.db.Checkpoint(dir); err != nil {
		return nil, fmt.Errorf("shale: raftstore: snapshot: %w", err)
	}
	return &fsmSnapshot{fs: f.fs, dir: dir}, nil
}

// fsmSnapshot is one checkpoint directory, streamed by Persist.
type fsmSnapshot struct {
	fs  vfs.FS
	dir string
}

// Persist writes the checkpoint's files to sink as a tar archive.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := writeTar(s.fs, s.dir, sink); err != nil {
		sink.Cancel()
		return fmt.Errorf("shale: raftstore: persist snapshot: %w", err)
	}
	return sink.Close()
}

// Release removes the checkpoint.
func (s *fsmSnapshot) Release() { s.fs.RemoveAll(s.dir) }

// writeTar writes every file of dir (a flat directory) to w as a tar
// archive, in name order.
func writeTar(fs vfs.FS, dir string, w io.Writer) error {
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	slices.Sort(names)
	tw := tar.NewWriter(w)
	for _, n := range names {
		p := fs.PathJoin(dir, n)
		st, err := fs.Stat(p)
		if err != nil {
			return err
		}
		if st.IsDir() {
			return fmt.Errorf("checkpoint %s holds a directory %s", dir, n)
		}
		if err := tw.WriteHeader(&tar.Header{Name: n, Size: st.Size(), Mode: 0o644, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		src, err := fs.Open(p)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, io.NewSectionReader(src, 0, st.Size()))
		src.Close()
		if err != nil {
			return fmt.Errorf("copy %s: %w", n, err)
		}
	}
	return tw.Close()
}

// Restore replaces the FSM's contents with a snapshot Persist wrote. It
// unpacks the archive into db.restore (each file synced), opens it once to
// check it, then closes the live DB and swaps directories: db -> db.old,
// db.restore -> db, and removes db.old. A crash at any point leaves either
// the old or the new DB to open (OpenFSM finishes the swap); raft restores
// the FSM from its own snapshot at start anyway. A malformed archive is
// refused and the FSM keeps its contents.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	tmp := f.path(fsmRestore)
	if err := f.fs.RemoveAll(tmp); err != nil {
		return fmt.Errorf("shale: raftstore: restore: %w", err)
	}
	if err := readTar(f.fs, tmp, rc); err != nil {
		f.fs.RemoveAll(tmp)
		return fmt.Errorf("shale: raftstore: restore: %w", err)
	}
	checkOpts := f.dbOpts
	checkOpts.CreateIfMissing = false // an archive without a DB is refused
	check, err := shale.Open(tmp, &checkOpts)
	if err == nil {
		err = check.Close()
	}
	if err != nil {
		f.fs.RemoveAll(tmp)
		return fmt.Errorf("shale: raftstore: restore: the snapshot does not open: %w", err)
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.db.Close(); err != nil && !errors.Is(err, shale.ErrClosed) {
		return fmt.Errorf("shale: raftstore: restore: close the old DB: %w", err)
	}
	live, old := f.path(fsmLive), f.path(fsmOld)
	swap := func() error {
		if err := f.fs.RemoveAll(old); err != nil {
			return err
		}
		if err := f.fs.Rename(live, old); err != nil {
			return err
		}
		if err := f.fs.Rename(tmp, live); err != nil {
			return err
		}
		if err := syncDir(f.fs, f.dir); err != nil {
			return err
		}
		return f.fs.RemoveAll(old)
	}
	swapErr := swap()
	db, err := shale.Open(live, &f.dbOpts)
	if err != nil {
		return fmt.Errorf("shale: raftstore: restore: reopen: %w", errors.Join(swapErr, err))
	}
	f.db = db
	if swapErr != nil {
		return fmt.Errorf("shale: raftstore: restore: swap directories: %w", swapErr)
	}
	f.restores.Add(1)
	return nil
}

// readTar unpacks a flat tar archive into a new directory dir, syncing each
// file and the directory.
func readTar(fs vfs.FS, dir string, r io.Reader) error {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read archive: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			return fmt.Errorf("archive entry %q is not a regular file", h.Name)
		}
		if h.Name == "" || h.Name == "." || h.Name == ".." || strings.ContainsAny(h.Name, `/\:`) {
			return fmt.Errorf("archive entry %q is not a plain file name", h.Name)
		}
		out, err := fs.Create(fs.PathJoin(dir, h.Name))
		if err != nil {
			return err
		}
		n, err := io.Copy(out, tr)
		if err == nil && n != h.Size {
			err = fmt.Errorf("archive entry %q: %d of %d bytes", h.Name, n, h.Size)
		}
		if err == nil {
			err = out.Sync()
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return syncDir(fs, dir)
}
