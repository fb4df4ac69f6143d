package block

import "github.com/shaledb/shale/vfs"

// directBufPool holds the aligned memory of RangeReads of direct-IO files.
var directBufPool vfs.AlignedPool

// RangeRead is the read of the bytes [off, off+n) of a file as one
// vfs.ReadRequest. From a direct-IO source the request reads the aligned
// range that covers them into pooled aligned memory (so vfs needs no
// bounce buffer); otherwise exactly them, into fresh memory. Every read of
// block bytes, synchronous or through the AsyncReader, is built here.
type RangeRead struct {
	// Req is the request to submit (or a copy of it, whose N and Err are
	// copied back before RangeBytes).
	Req vfs.ReadRequest
	// mem is the pooled memory of a direct read (nil otherwise), which
	// Release returns once the bytes are no longer used; skip is where the
	// range starts in Req.Buf.
	mem  *[]byte
	skip int
	n    int
	// borrowed marks bytes served from the File's mapping (ReadRange):
	// nothing to release, but they are not the caller's to keep.
	borrowed bool
}

// NewRangeRead prepares the read of [off, off+n) from src; the request's
// Deadline is src's for a read starting now.
func NewRangeRead(src Source, off int64, n int) RangeRead {
	if src.Align <= 1 {
		return RangeRead{Req: vfs.ReadRequest{File: src.File, Off: off, Buf: make([]byte, n), Deadline: src.Deadline.ForRead()}, n: n}
	}
	start := vfs.AlignDown(off, src.Align)
	need := int(vfs.AlignUp(off+int64(n), src.Align) - start)
	mem := directBufPool.Get(need, src.Align)
	return RangeRead{Req: vfs.ReadRequest{File: src.File, Off: start, Buf: (*mem)[:need], Deadline: src.Deadline.ForRead()}, mem: mem, skip: int(off - start), n: n}
}

// Pooled reports whether the bytes are borrowed: pooled memory of a direct
// read, reused once released, or a file's mapping. A caller keeping them
// past Release copies them.
func (rr *RangeRead) Pooled() bool { return rr.mem != nil || rr.borrowed }

// Release returns the pooled memory of a direct read; the bytes must not be
// used afterwards.
func (rr *RangeRead) Release() {
	if rr.mem != nil {
		directBufPool.Put(rr.mem)
		rr.mem = nil
	}
}

// RangeBytes returns the range of rr once its Req has been read (Req.N,
// Req.Err set), or the error of a failed or short read (ReadResult).
func (f *File) RangeBytes(rr *RangeRead) ([]byte, error) {
	q := &rr.Req
	if err := f.ReadResult(q.Off+int64(rr.skip), rr.n, q.N-rr.skip, q.Err); err != nil {
		return nil, err
	}
	return q.Buf[rr.skip : rr.skip+rr.n], nil
}

// ReadAll reads reqs: as one batch submitted through ar, or, when ar is nil,
// one after another with ReadAt. done is called (from the caller's
// goroutine) with each request's index as it completes, and async says
// whether it went through ar; reads still in flight are not waited for
// before done returns.
func ReadAll(ar vfs.AsyncReader, reqs []vfs.ReadRequest, done func(i int, async bool)) {
	if ar == nil {
		for i := range reqs {
			q := &reqs[i]
			q.N, q.Err = vfs.ReadAtDeadline(q.File, q.Buf, q.Off, q.Deadline)
			done(i, false)
		}
		return
	}
	rb := ar.Submit(reqs)
	for {
		i, ok := rb.Next()
		if !ok {
			break
		}
		done(i, true)
	}
	rb.Release()
}
