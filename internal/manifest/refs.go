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
	mu     sync.Mutex
	tables liveFiles[*FileMetadata]
	blobs  liveFiles[*BlobFileMetadata]
}

// liveFiles counts the referenced versions holding each file of one kind
// (the tracker's mu is held) and collects the files no longer held.
type liveFiles[M any] struct {
	live     map[base.FileNum]trackedFile[M]
	obsolete []M
}

type trackedFile[M any] struct {
	meta M
	refs int32
}

func newFileTracker() *fileTracker {
	return &fileTracker{
		tables: liveFiles[*FileMetadata]{live: make(map[base.FileNum]trackedFile[*FileMetadata])},
		blobs:  liveFiles[*BlobFileMetadata]{live: make(map[base.FileNum]trackedFile[*BlobFileMetadata])},
	}
}

// ref counts one more referenced version holding file num (m). The first
// metadata seen for a number is kept: versions may hold copies (a table an
// edit moved, a blob file with more garbage).
func (l *liveFiles[M]) ref(num base.FileNum, m M) {
	tf, ok := l.live[num]
	if !ok {
		tf.meta = m
	}
	tf.refs++
	l.live[num] = tf
}

// unref counts one less referenced version holding file num and makes it
// obsolete when none is left.
func (l *liveFiles[M]) unref(num base.FileNum) {
	tf, ok := l.live[num]
	if !ok || tf.refs <= 0 {
		base.AssertionFailedf("manifest: file %s unreferenced but not tracked", num)
	}
	tf.refs--
	if tf.refs == 0 {
		delete(l.live, num)
		l.obsolete = append(l.obsolete, tf.meta)
	} else {
		l.live[num] = tf
	}
}

// take returns the files made obsolete since the last call.
func (l *liveFiles[M]) take() []M {
	o := l.obsolete
	l.obsolete = nil
	return o
}

// nums returns the numbers of the live files.
func (l *liveFiles[M]) nums() map[base.FileNum]struct{} {
	m := make(map[base.FileNum]struct{}, len(l.live))
	for n := range l.live {
		m[n] = struct{}{}
	}
	return m
}

// liveSizes returns the sizes of the live tables and blob files, summed.
func (t *fileTracker) liveSizes() (tables, blobs uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tf := range t.tables.live {
		tables += tf.meta.Size
	}
	for _, tf := range t.blobs.live {
		blobs += tf.meta.Size
	}
	return tables, blobs
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
			t.tables.ref(f.FileNum, f)
		}
	}, func(t *fileTracker, b *BlobFileMetadata) { t.blobs.ref(b.FileNum, b) })
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
			t.tables.unref(f.FileNum)
		}
	}, func(t *fileTracker, b *BlobFileMetadata) { t.blobs.unref(b.FileNum) })
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

// Refs returns the current number of references to v; for tests and
// invariant checks.
func (v *Version) Refs() int32 { return v.refs.Load() }

func (t *fileTracker) takeObsolete() []*FileMetadata {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tables.take()
}

func (t *fileTracker) liveFileNums() map[base.FileNum]struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tables.nums()
}

func (t *fileTracker) takeObsoleteBlobs() []*BlobFileMetadata {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.blobs.take()
}

func (t *fileTracker) liveBlobFileNums() map[base.FileNum]struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.blobs.nums()
}
