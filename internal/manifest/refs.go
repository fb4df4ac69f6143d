package manifest

import (
	"sync"

	"github.com/shaledb/shale/internal/base"
)

// fileTracker counts, per file number, the referenced versions (refs > 0)
// that hold a table, and collects the tables whose count drops to zero.
// Counting by file number rather than by *FileMetadata keeps a table that an
// edit moves between levels (possibly as a fresh FileMetadata) live
// throughout.
//
// Blob files are counted the same way, apart: a blob file is obsolete once
// no referenced version holds it, which happens only after an edit deleted
// it (see Version.UnreferencedBlobFiles) and every version from before that
// edit is released.
type fileTracker struct {
	mu       sync.Mutex
	live     map[base.FileNum]trackedFile
	obsolete []*FileMetadata

	liveBlobs     map[base.FileNum]trackedBlob
	obsoleteBlobs []*BlobFileMetadata
}

type trackedBlob struct {
	meta *BlobFileMetadata
	refs int32
}

type trackedFile struct {
	meta *FileMetadata
	refs int32
}

func newFileTracker() *fileTracker {
	return &fileTracker{live: make(map[base.FileNum]trackedFile), liveBlobs: make(map[base.FileNum]trackedBlob)}
}

// Ref adds a reference to v. The first reference makes v hold a reference on
// each of its files; it must be taken before v is shared.
func (v *Version) Ref() {
	if v.refs.Add(1) != 1 {
		return
	}
	if v.released.Load() {
		base.AssertionFailedf("manifest: Ref of a version whose refs already dropped to zero")
	}
	v.forEachFile(func(t *fileTracker, f *FileMetadata) {
		f.refs.Add(1)
		if t != nil {
			t.ref(f)
		}
	}, (*fileTracker).refBlob)
}

// Unref drops a reference to v. The last one releases v's references on its
// files; a file no referenced version holds any more goes to the owning
// VersionSet's obsolete list (see VersionSet.TakeObsoleteTables).
func (v *Version) Unref() {
	n := v.refs.Add(-1)
	if n > 0 {
		return
	}
	if n < 0 {
		base.AssertionFailedf("manifest: version refs dropped below zero")
	}
	v.released.Store(true)
	v.forEachFile(func(t *fileTracker, f *FileMetadata) {
		if f.refs.Add(-1) < 0 {
			base.AssertionFailedf("manifest: file %s refs dropped below zero", f.FileNum)
		}
		if t != nil {
			t.unref(f)
		}
	}, (*fileTracker).unrefBlob)
}

// forEachFile calls fn on each table of v with v's tracker, locked, or nil
// when v has none; and, when v has a tracker, blobFn on each blob file.
func (v *Version) forEachFile(fn func(t *fileTracker, f *FileMetadata), blobFn func(t *fileTracker, b *BlobFileMetadata)) {
	t := v.tracker
	if t != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
	}
	for _, files := range v.Levels {
		for _, f := range files {
			fn(t, f)
		}
	}
	if t != nil {
		for _, b := range v.BlobFiles {
			blobFn(t, b)
		}
	}
}

// refBlob counts one more referenced version holding b; t.mu is held. The
// first BlobFileMetadata seen for a number is kept: versions hold copies
// that differ only in garbage.
func (t *fileTracker) refBlob(b *BlobFileMetadata) {
	tb := t.liveBlobs[b.FileNum]
	tb.refs++
	if tb.meta == nil {
		tb.meta = b
	}
	t.liveBlobs[b.FileNum] = tb
}

// unrefBlob counts one less referenced version holding b and makes the blob
// file obsolete when none is left; t.mu is held.
func (t *fileTracker) unrefBlob(b *BlobFileMetadata) {
	tb, ok := t.liveBlobs[b.FileNum]
	if !ok || tb.refs <= 0 {
		base.AssertionFailedf("manifest: blob file %s unreferenced but not tracked", b.FileNum)
	}
	tb.refs--
	if tb.refs == 0 {
		delete(t.liveBlobs, b.FileNum)
		t.obsoleteBlobs = append(t.obsoleteBlobs, tb.meta)
	} else {
		t.liveBlobs[b.FileNum] = tb
	}
}

// ref counts one more referenced version holding f; t.mu is held.
func (t *fileTracker) ref(f *FileMetadata) {
	tf := t.live[f.FileNum]
	tf.refs++
	if tf.meta == nil {
		tf.meta = f
	}
	t.live[f.FileNum] = tf
}

// unref counts one less referenced version holding f and makes the table
// obsolete when none is left; t.mu is held.
func (t *fileTracker) unref(f *FileMetadata) {
	tf, ok := t.live[f.FileNum]
	if !ok || tf.refs <= 0 {
		base.AssertionFailedf("manifest: file %s unreferenced but not tracked", f.FileNum)
	}
	tf.refs--
	if tf.refs == 0 {
		delete(t.live, f.FileNum)
		t.obsolete = append(t.obsolete, tf.meta)
	} else {
		t.live[f.FileNum] = tf
	}
}

// Refs returns the current number of references to v; for tests and
// invariant checks.
func (v *Version) Refs() int32 { return v.refs.Load() }

func (t *fileTracker) takeObsolete() []*FileMetadata {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := t.obsolete
	t.obsolete = nil
	return o
}

func (t *fileTracker) liveFileNums() map[base.FileNum]struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := make(map[base.FileNum]struct{}, len(t.live))
	for n := range t.live {
		m[n] = struct{}{}
	}
	return m
}

func (t *fileTracker) takeObsoleteBlobs() []*BlobFileMetadata {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := t.obsoleteBlobs
	t.obsoleteBlobs = nil
	return o
}

func (t *fileTracker) liveBlobFileNums() map[base.FileNum]struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := make(map[base.FileNum]struct{}, len(t.liveBlobs))
	for n := range t.liveBlobs {
		m[n] = struct{}{}
	}
	return m
}
