package sstable

import (
	"sync"

	"github.com/shaledb/shale/vfs"
)

// defaultMaxAutoReadahead is ReaderOptions.MaxAutoReadaheadSize's default,
// RocksDB's max_auto_readahead_size.
const defaultMaxAutoReadahead = 256 << 10

// directBufAlign is the alignment of pooled direct-IO buffers: enough for
// every logical block size in use (512 and 4096 bytes), so a pooled buffer
// suits any direct file.
const directBufAlign = 4096

// directBuf is pooled memory for single-block reads of direct-IO files;
// the pointer lets the pool hold it without an allocation per Put.
type directBuf struct{ b []byte }

var directBufPool = sync.Pool{New: func() any { return new(directBuf) }}

// readDirect reads [off, off+n) of a direct-IO file by reading the aligned
// range that covers it into pooled aligned memory, so vfs needs no bounce
// buffer. The returned bytes alias db, which the caller puts back in
// directBufPool when done with them.
func (r *Reader) readDirect(src fileSource, off int64, n int) (db *directBuf, b []byte, err error) {
	a := int64(src.align)
	start := off &^ (a - 1)
	end := (off + int64(n) + a - 1) &^ (a - 1)
	need := int(end - start)
	db = directBufPool.Get().(*directBuf)
	if cap(db.b) < need || !addrAligned(db.b, src.align) {
		size := directBufAlign
		for size < need {
			size <<= 1
		}
		db.b = vfs.AlignedBuffer(size, max(src.align, directBufAlign))
	}
	buf := db.b[:need]
	got, rerr := src.f.ReadAt(buf, start)
	r.stats.FileReads.Add(1)
	r.stats.DirectReads.Add(1)
	r.stats.BytesRead.Add(uint64(got))
	if err := r.readResult(off, n, got-int(off-start), rerr); err != nil {
		directBufPool.Put(db)
		return nil, nil, err
	}
	return db, buf[off-start : off-start+int64(n)], nil
}

// addrAligned reports whether p's memory starts on a multiple of align.
func addrAligned(p []byte, align int) bool {
	return align <= 1 || (cap(p) >= align && vfs.IsAligned(p[:align:align], 0, align))
}

// fileSource is a handle data blocks are read from and its direct-IO
// alignment: the Reader's own, or one an iterator was given
// (IterOptions.File), such as a direct-IO handle for compaction.
type fileSource struct {
	f     vfs.File
	align int
}

// source is the Reader's own handle.
func (r *Reader) source() fileSource { return fileSource{r.f, r.align} }
