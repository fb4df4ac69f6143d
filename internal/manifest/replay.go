package manifest

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/record"
)

// ParseCurrent returns the number of the MANIFEST that data, the content of
// CURRENT, names: a MANIFEST file name and a newline, nothing else. Anything
// else is a corruption error naming fileName.
func ParseCurrent(data []byte, fileName string) (base.FileNum, error) {
	s, nl := strings.CutSuffix(string(data), "\n")
	t, num, ok := base.ParseFilename(s)
	if !nl || !ok || t != base.FileTypeManifest || base.MakeFilename(t, num) != s {
		return 0, base.CorruptionErrorf(fileName, 0, "manifest: CURRENT holds %q, not a MANIFEST name and a newline", data)
	}
	return num, nil
}

// ReplayResult is what Replay read from a MANIFEST.
type ReplayResult struct {
	// Version is the version the edits build, with no references and no
	// VersionSet.
	Version *Version
	// Records is the number of records replayed.
	Records int
	// NextFileNum, LogNum and LastSeq are the last values the edits
	// recorded.
	NextFileNum base.FileNum
	LogNum      base.FileNum
	LastSeq     base.SeqNum
	// MaxFileNum is the largest number of a table or blob file the edits
	// added.
	MaxFileNum base.FileNum
	// End is the file offset just past the last record replayed: where a
	// follower of the MANIFEST (VersionSet.CatchUp) reads on from.
	End int64
	// TornOffset and TornBytes describe the torn tail dropped at the end:
	// where it begins and how many bytes it holds, trailing zeros not
	// counted. TornBytes is 0 when the MANIFEST ends cleanly.
	TornOffset, TornBytes int64
}

// Replay reads a MANIFEST from r, which must be positioned at its start,
// decodes every record and applies the edits in order to an empty version
// of numLevels levels. It is the one reading of a MANIFEST: Load and the
// root package's Check both use it, so they cannot judge one differently.
//
// A torn tail, what a crash in the middle of an append leaves, is dropped
// and described in the result. Anything else ends the replay with an error
// naming fileName and, where there is one, the offset of the record:
// damage followed by intact records, a damaged last record (every edit is
// synced before it takes effect, so the last one may describe files
// already relied on, such as a flush whose WAL is gone: dropping it would
// lose data silently), a record that does not decode or does not apply, a
// first record that names no comparer or a newer format, no records at all
// or no next file number (all matching base.ErrCorruption), an edit naming
// a comparer other than cmp (base.ErrInvalidArgument), or an error reading
// r. The result is then zero, but for a damaged last record: it then
// describes the records before it, so that a checker can still say which
// tables and WALs they make live.
func Replay(r io.Reader, fileName string, cmp *base.Comparer, numLevels int) (ReplayResult, error) {
	var res ReplayResult
	b, err := newVersionBuilder(cmp, numLevels, nil)
	if err != nil {
		return ReplayResult{}, err
	}
	rr := record.NewReader(r, fileName)
	haveNext := false
	var e VersionEdit
	var tailErr error
	for {
		rec, err := rr.Next()
		if err == io.EOF {
			if err := rr.TailDamage(); err != nil {
				tailErr = fmt.Errorf("%w (the MANIFEST's last edit is not dropped: it may describe files already relied on)", err)
			} else {
				res.TornOffset, res.TornBytes = rr.TornTail()
			}
			break
		}
		if err != nil {
			if errors.Is(err, base.ErrCorruption) {
				return ReplayResult{}, err
			}
			return ReplayResult{}, fmt.Errorf("shale: reading %s: %w", fileName, err)
		}
		off, i := rr.Offset(), res.Records
		if err := e.Decode(rec, fileName, off); err != nil {
			return ReplayResult{}, err
		}
		if i == 0 {
			if e.ComparerName == "" {
				return ReplayResult{}, base.CorruptionErrorf(fileName, off, "manifest: first record names no comparer; not a shale MANIFEST")
			}
			if e.ManifestFormat > ManifestFormatV1 {
				return ReplayResult{}, base.CorruptionErrorf(fileName, off, "manifest: format %d is newer than this shale supports (%d)", e.ManifestFormat, ManifestFormatV1)
			}
		}
		if e.ComparerName != "" && e.ComparerName != cmp.Name {
			return ReplayResult{}, base.InvalidArgumentf("shale: %s was written with comparer %q, but Options.Comparer is %q",
				fileName, e.ComparerName, cmp.Name)
		}
		if err := b.apply(&e); err != nil {
			return ReplayResult{}, fmt.Errorf("%w: %w", base.CorruptionErrorf(fileName, off, "manifest record %d does not apply", i), err)
		}
		res.Records++
		res.End = rr.EndOffset()
		if e.HasNextFileNumber {
			haveNext, res.NextFileNum = true, e.NextFileNumber
		}
		if e.HasLogNumber {
			res.LogNum = e.LogNumber
		}
		if e.HasLastSeq {
			res.LastSeq = e.LastSeq
		}
		for _, nf := range e.NewFiles {
			res.MaxFileNum = max(res.MaxFileNum, nf.Meta.FileNum)
		}
		for _, bf := range e.NewBlobFiles {
			res.MaxFileNum = max(res.MaxFileNum, bf.FileNum)
		}
	}
	// fail reports err, or the damaged last record that may be its cause.
	fail := func(err error) (ReplayResult, error) {
		if tailErr != nil {
			err = tailErr
		}
		return ReplayResult{}, err
	}
	if res.Records == 0 {
		return fail(base.CorruptionErrorf(fileName, 0, "manifest: MANIFEST holds no records"))
	}
	if !haveNext {
		return fail(base.CorruptionErrorf(fileName, 0, "manifest: no next file number recorded"))
	}
	if res.Version, err = b.finish(); err != nil {
		return fail(fmt.Errorf("%w: %w", base.CorruptionErrorf(fileName, 0, "manifest: replayed version is invalid"), err))
	}
	return res, tailErr
}

// ScanEdits decodes the edits of a MANIFEST read from r in order and calls
// fn with each, applying nothing. It stops at the first record that is
// damaged or does not decode and returns that error (nil at a clean or torn
// end), so a reader that wants what a damaged MANIFEST still says (repair)
// gets every edit before the damage. fn must not keep the edit.
func ScanEdits(r io.Reader, fileName string, fn func(e *VersionEdit)) error {
	rr := record.NewReader(r, fileName)
	var e VersionEdit
	for {
		rec, err := rr.Next()
		if err == io.EOF {
			return rr.TailDamage()
		}
		if err != nil {
			return err
		}
		if err := e.Decode(rec, fileName, rr.Offset()); err != nil {
			return err
		}
		fn(&e)
	}
}
