package sstable

import "github.com/shaledb/shale/vfs"

// defaultMaxAutoReadahead is ReaderOptions.MaxAutoReadaheadSize's default,
// RocksDB's max_auto_readahead_size.
const defaultMaxAutoReadahead = 256 << 10

// directBufPool holds the aligned memory of single-block reads of direct-IO
// files.
var directBufPool vfs.AlignedPool

// readDirect reads [off, off+n) of a direct-IO file by reading the aligned
// range that covers it into pooled aligned memory, so vfs needs no bounce
// buffer. The returned bytes alias db, which the caller puts back in
// directBufPool when done with them.
func (r *Reader) readDirect(src fileSource, off int64, n int) (db *[]byte, b []byte, err error) {
	start := vfs.AlignDown(off, src.align)
	end := vfs.AlignUp(off+int64(n), src.align)
	need := int(end - start)
	db = directBufPool.Get(need, src.align)
	buf := (*db)[:need]
	got, rerr := src.f.ReadAt(buf, start)
	r.countFileRead(src, got)
	if err := r.readResult(off, n, got-int(off-start), rerr); err != nil {
		directBufPool.Put(db)
		return nil, nil, err
	}
	return db, buf[off-start : off-start+int64(n)], nil
}

// fileSource is a handle data blocks are read from and its direct-IO
// alignment: the Reader's own, or one an iterator was given
// (IterOptions.File), such as a direct-IO handle for compaction.
type fileSource struct {
	f     vfs.File
	align int
	// stats, when not nil, also receives the counts of reads from this
	// source (IterOptions.Stats): the Reader's stats always do.
	stats *ReadStats
}

// source is the Reader's own handle.
func (r *Reader) source() fileSource { return fileSource{r.f, r.align, nil} }
