package manifest

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/record"
)

// followAttempts bounds how often CatchUp reads CURRENT again when the
// MANIFEST it names vanished before it could be opened (the writer
// switched MANIFESTs twice in a row).
const followAttempts = 10

// CatchUp brings a version set loaded with Options.ReadOnly up to date
// with the MANIFEST the database's writer keeps appending to (RocksDB's
// secondary instance): it applies the edits appended since the last load
// or catch-up, or, when CURRENT names another MANIFEST, replays that one
// from its start. It writes nothing. A torn last record (an append in
// progress) is left for the next call; the complete ones before it are
// applied. It reports whether the current version changed. On an error
// the version set is as it was, or includes the edits before a damaged
// record; a later call reads on from there.
func (vs *VersionSet) CatchUp() (changed bool, err error) {
	vs.writeMu.Lock()
	defer vs.writeMu.Unlock()
	if vs.writeMu.closed {
		return false, base.ErrClosed
	}
	if !vs.opts.ReadOnly {
		return false, base.InvalidArgumentf("shale: manifest: CatchUp needs a version set loaded read-only")
	}
	for attempt := 0; ; attempt++ {
		num, err := readCurrent(vs.opts)
		if err == nil {
			if num == vs.ManifestFileNum() {
				changed, err = vs.readOnLocked(num)
			} else {
				changed, err = vs.switchFollowedLocked(num)
			}
		}
		// A MANIFEST that is gone was replaced since CURRENT was read:
		// CURRENT names its successor now.
		if err == nil || !errors.Is(err, os.ErrNotExist) || attempt+1 == followAttempts {
			return changed, err
		}
	}
}

// readOnLocked applies the records of MANIFEST num from the follow offset
// on.
func (vs *VersionSet) readOnLocked(num base.FileNum) (bool, error) {
	o := &vs.opts
	name := base.MakeFilename(base.FileTypeManifest, num)
	f, err := o.FS.Open(o.FS.PathJoin(o.Dir, name))
	if err != nil {
		return false, fmt.Errorf("shale: opening %s: %w", name, err)
	}
	defer f.Close()
	rr := record.NewReaderAt(f, name, vs.follow.off)
	var edits []*VersionEdit
	end := vs.follow.off
	var readErr error
	for {
		rec, err := rr.Next()
		if err == io.EOF {
			readErr = rr.TailDamage()
			break
		}
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				err = fmt.Errorf("shale: reading %s: %w", name, err)
			}
			readErr = err
			break
		}
		e := new(VersionEdit)
		if err := e.Decode(rec, name, rr.Offset()); err != nil {
			readErr = err
			break
		}
		if e.ComparerName != "" && e.ComparerName != o.Comparer.Name {
			readErr = base.InvalidArgumentf("shale: %s was written with comparer %q, but Options.Comparer is %q",
				name, e.ComparerName, o.Comparer.Name)
			break
		}
		edits = append(edits, e)
		end = rr.EndOffset()
	}
	if len(edits) == 0 {
		return false, readErr
	}
	vs.mu.Lock()
	cur := vs.mu.current
	vs.mu.Unlock()
	next, err := Apply(o.Comparer, o.NumLevels, cur, edits...)
	if err != nil {
		return false, fmt.Errorf("%w: %w", base.CorruptionErrorf(name, vs.follow.off, "manifest: the records appended at offset %d do not apply", vs.follow.off), err)
	}
	for _, e := range edits {
		for _, nf := range e.NewFiles {
			vs.MarkFileNumUsed(nf.Meta.FileNum)
		}
		for _, b := range e.NewBlobFiles {
			vs.MarkFileNumUsed(b.FileNum)
		}
		if e.HasNextFileNumber && e.NextFileNumber > 0 {
			vs.MarkFileNumUsed(e.NextFileNumber - 1)
		}
		if e.HasLogNumber && e.LogNumber > vs.LogNumber() {
			vs.logNum.Store(uint64(e.LogNumber))
		}
		if e.HasLastSeq {
			vs.SetLastSeq(e.LastSeq)
		}
	}
	vs.follow.off = end
	vs.installLocked(next)
	return true, readErr
}

// switchFollowedLocked replays MANIFEST num, which CURRENT names now, and
// makes its version the current one.
func (vs *VersionSet) switchFollowedLocked(num base.FileNum) (bool, error) {
	// replay sets the counters and the follow offset only on success.
	v, err := vs.replay(num)
	if err != nil {
		return false, err
	}
	vs.installLocked(v)
	vs.opts.Logger.Info("shale: following a new MANIFEST", "file", base.MakeFilename(base.FileTypeManifest, num))
	return true, nil
}

// installLocked makes next, a version built on this set's files, the
// current one.
func (vs *VersionSet) installLocked(next *Version) {
	next.tracker = vs.tracker
	next.Ref()
	vs.mu.Lock()
	cur := vs.mu.current
	vs.mu.current = next
	vs.mu.Unlock()
	cur.Unref()
}
