package sstable

import "github.com/shaledb/shale/vfs"

// defaultMaxAutoReadahead is ReaderOptions.MaxAutoReadaheadSize's default,
// RocksDB's max_auto_readahead_size.
const defaultMaxAutoReadahead = 256 << 10

// directBufPool holds the aligned memory of rangeReads of direct-IO files.
var directBufPool vfs.AlignedPool

// rangeRead is the read of the bytes [off, off+n) of a table file as one
// vfs.ReadRequest. On a direct-IO file the request reads the aligned range
// that covers them into pooled aligned memory (so vfs needs no bounce
// buffer); otherwise exactly them, into fresh memory. Every read of table
// bytes, synchronous or through the AsyncReader, is built here.
type rangeRead struct {
	req vfs.ReadRequest
	// mem is the pooled memory of a direct read (nil otherwise), which
	// release returns once the bytes are no longer used; skip is where the
	// range starts in req.Buf.
	mem  *[]byte
	skip int
	n    int
}

// newRangeRead prepares the read of [off, off+n) from src.
func newRangeRead(src fileSource, off int64, n int) rangeRead {
	if src.align <= 1 {
		return rangeRead{req: vfs.ReadRequest{File: src.f, Off: off, Buf: make([]byte, n)}, n: n}
	}
	start := vfs.AlignDown(off, src.align)
	need := int(vfs.AlignUp(off+int64(n), src.align) - start)
	mem := directBufPool.Get(need, src.align)
	return rangeRead{req: vfs.ReadRequest{File: src.f, Off: start, Buf: (*mem)[:need]}, mem: mem, skip: int(off - start), n: n}
}

// pooled reports whether the bytes are in pooled memory (a direct read), reused once released.
func (rr *rangeRead) pooled() bool { return rr.mem != nil }

// rangeBytes returns the range of rr once its req has been read (req.N,
// req.Err set), or the error of a failed or short read (Reader.readResult).
func (r *Reader) rangeBytes(rr *rangeRead) ([]byte, error) {
	q := &rr.req
	if err := r.readResult(q.Off+int64(rr.skip), rr.n, q.N-rr.skip, q.Err); err != nil {
		return nil, err
	}
	return q.Buf[rr.skip : rr.skip+rr.n], nil
}

// release returns the pooled memory of a direct read; the bytes must not be
// used afterwards.
func (rr *rangeRead) release() {
	if rr.mem != nil {
		directBufPool.Put(rr.mem)
		rr.mem = nil
	}
}

// readDirect reads [off, off+n) of a direct-IO file (a rangeRead read with
// ReadAt). The returned bytes alias db, which the caller puts back in
// directBufPool when done with them.
func (r *Reader) readDirect(src fileSource, off int64, n int) (db *[]byte, b []byte, err error) {
	rr := newRangeRead(src, off, n)
	rr.req.N, rr.req.Err = src.f.ReadAt(rr.req.Buf, rr.req.Off)
	r.countFileRead(src, rr.req.N)
	b, err = r.rangeBytes(&rr)
	if err != nil {
		rr.release()
		return nil, nil, err
	}
	return rr.mem, b, nil
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
