package shale

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/vfs"
)

// backupCapture is a consistent set of a DB's files for a backup: the
// tables and blob files of one version, pinned so that no compaction
// deletes them while they are copied, the MANIFEST bytes that describe
// exactly that version, and a CURRENT naming it.
type backupCapture struct {
	files []capturedFile
	// seq is the last seqnum the captured MANIFEST records.
	seq uint64
	// release unpins the version.
	release func()
}

// capturedFile is one file of a capture, named as in the DB directory.
type capturedFile struct {
	name string
	// shareable files (tables and blob files) are immutable and go to the
	// backup's shared directory.
	shareable bool
	// size is the file's size when captured; the copy takes that many
	// bytes.
	size int64
	// data, when not nil, is the file's content (MANIFEST, CURRENT):
	// files that are still appended to or replaced are read once, when
	// captured.
	data []byte
}

// maxCaptureAttempts bounds the retries of captureForBackup when edits race
// with it (each retry follows a MANIFEST edit that landed between the pin
// and the read).
const maxCaptureAttempts = 50

// captureForBackup flushes the memtables, so that every write acknowledged
// before the call is in a table, and captures the live files. A capture
// pins the current version, then reads CURRENT and the MANIFEST it names and
// replays the bytes read: the two agree when the replayed version holds the
// same tables and blob files as the pinned one. An edit that lands in
// between makes them differ, and the capture starts over.
func (d *DB) captureForBackup() (*backupCapture, error) {
	if d.closed.Load() {
		return nil, ErrClosed
	}
	if d.readOnly {
		return nil, fmt.Errorf("shale: backing up a DB opened with OpenForReadOnly is not supported (its WAL's writes are in no table): %w", ErrReadOnly)
	}
	if err := d.Flush(); err != nil {
		return nil, fmt.Errorf("shale: backup: flushing the memtables: %w", err)
	}
	var lastErr error
	for range maxCaptureAttempts {
		c, err := d.tryCaptureForBackup()
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, errCaptureRaced) {
			return nil, err
		}
		lastErr = err
	}
	return nil, fmt.Errorf("shale: backup: the DB's files kept changing: %w", lastErr)
}

var errCaptureRaced = errors.New("shale: backup: the MANIFEST changed while it was read")

func (d *DB) tryCaptureForBackup() (*backupCapture, error) {
	rs := d.loadReadState()
	if rs == nil {
		return nil, ErrClosed
	}
	ok := false
	defer func() {
		if !ok {
			rs.unref()
		}
	}()
	v := rs.version
	currentName := base.MakeFilename(base.FileTypeCurrent, 0)
	current, err := readFileForBackup(d.fs, d.fs.PathJoin(d.dirname, currentName))
	if err != nil {
		return nil, fmt.Errorf("shale: backup: reading %s: %w", currentName, err)
	}
	manifestNum, err := manifest.ParseCurrent(current, d.fs.PathJoin(d.dirname, currentName))
	if err != nil {
		return nil, err
	}
	manifestName := base.MakeFilename(base.FileTypeManifest, manifestNum)
	manifestPath := d.fs.PathJoin(d.dirname, manifestName)
	data, err := readFileForBackup(d.fs, manifestPath)
	if errors.Is(err, os.ErrNotExist) {
		// Replaced by a newer MANIFEST since CURRENT was read.
		return nil, errCaptureRaced
	}
	if err != nil {
		return nil, fmt.Errorf("shale: backup: reading %s: %w", manifestName, err)
	}
	res, err := manifest.Replay(bytes.NewReader(data), manifestPath, d.cmp, d.opts.NumLevels)
	if err != nil {
		return nil, err
	}
	if res.TornBytes > 0 {
		// An append in progress: its edit is not in the pinned version.
		data = data[:res.TornOffset]
	}
	if !sameFiles(v, res.Version) {
		return nil, errCaptureRaced
	}
	c := &backupCapture{seq: uint64(res.LastSeq), release: rs.unref}
	for _, files := range v.Levels {
		for _, f := range files {
			c.files = append(c.files, capturedFile{name: base.MakeFilename(base.FileTypeTable, f.FileNum), shareable: true, size: int64(f.Size)})
		}
	}
	for _, b := range v.BlobFiles {
		c.files = append(c.files, capturedFile{name: base.MakeFilename(base.FileTypeBlob, b.FileNum), shareable: true, size: int64(b.Size)})
	}
	// The newest OPTIONS file, for tools (Open does not read it).
	if names, err := d.fs.List(d.dirname); err == nil {
		var newest base.FileNum
		found := false
		for _, n := range names {
			if t, num, ok := base.ParseFilename(n); ok && t == base.FileTypeOptions && (!found || num > newest) {
				newest, found = num, true
			}
		}
		if found {
			name := base.MakeFilename(base.FileTypeOptions, newest)
			if opts, err := readFileForBackup(d.fs, d.fs.PathJoin(d.dirname, name)); err == nil {
				c.files = append(c.files, capturedFile{name: name, size: int64(len(opts)), data: opts})
			}
		}
	}
	c.files = append(c.files,
		capturedFile{name: manifestName, size: int64(len(data)), data: data},
		capturedFile{name: currentName, size: int64(len(current)), data: current})
	ok = true
	return c, nil
}

// sameFiles says whether a and b hold the same tables and blob files.
func sameFiles(a, b *manifest.Version) bool {
	nums := func(v *manifest.Version) (tables, blobs []base.FileNum) {
		for _, files := range v.Levels {
			for _, f := range files {
				tables = append(tables, f.FileNum)
			}
		}
		for _, bf := range v.BlobFiles {
			blobs = append(blobs, bf.FileNum)
		}
		slices.Sort(tables)
		return tables, blobs
	}
	at, ab := nums(a)
	bt, bb := nums(b)
	return slices.Equal(at, bt) && slices.Equal(ab, bb)
}

// readFileForBackup reads name through fs.
func readFileForBackup(fs vfs.FS, name string) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !(errors.Is(err, io.EOF) && int64(n) == size) {
		return nil, err
	}
	return buf, nil
}
