package block

import (
	"errors"

	"github.com/shaledb/shale/vfs"
)

// PendingRead is the read of one block submitted without waiting for it
// (the first phase of a two-phase seek): alone through the File's
// AsyncReader, or as one request of a ReadGroup's batch. Its zero value is
// idle.
//
// Invariant: from Submit until Wait returns the read may be in flight, and
// its buffer must be neither reused nor pooled; whoever drops a submitted
// read waits for it first, then calls Release.
type PendingRead struct {
	// The read is batch's request, or with a ReadGroup the group's request
	// idx of generation gen.
	batch *vfs.ReadBatch
	group *ReadGroup
	gen   uint64
	idx   int
	// rr is the block's read; req is the copy of rr.Req submitted (a
	// one-request batch), which receives the result.
	rr  RangeRead
	req [1]vfs.ReadRequest
}

// ErrPendingLost says a pending read's result was dropped by its
// ReadGroup (a later batch replaced it); the caller reads the block by
// itself.
var ErrPendingLost = errors.New("block: pending read dropped")

// SubmitRead starts the read of the block at h (with its trailer) from src
// into p, through g when it is not nil, else through the File's
// AsyncReader, which it must have. The caller checked h.
func (f *File) SubmitRead(p *PendingRead, src Source, h Handle, g *ReadGroup) {
	p.rr = NewRangeRead(src, int64(h.Offset), int(h.Length)+TrailerLen)
	p.req[0] = p.rr.Req
	f.stats.AsyncReads.Add(1)
	if src.Stats != nil {
		src.Stats.AsyncReads.Add(1)
	}
	if g != nil {
		p.group = g
		p.gen, p.idx = g.Add(p.req[0])
		return
	}
	p.batch = f.async.Submit(p.req[:])
}

// WaitRead waits for the read p submitted from src and counts it; it
// returns the block's bytes with their trailer (in pooled memory when
// p.Pooled()), the read's error, or ErrPendingLost.
func (f *File) WaitRead(p *PendingRead, src Source) ([]byte, error) {
	req := &p.req[0]
	if p.group != nil {
		n, rerr, ok := p.group.Wait(p.gen, p.idx)
		if !ok {
			return nil, ErrPendingLost
		}
		req.N, req.Err = n, rerr
	} else {
		p.batch.Wait()
		p.batch.Release()
		p.batch = nil
	}
	f.CountFileRead(src, req.N)
	p.rr.Req.N, p.rr.Req.Err = req.N, req.Err
	return f.RangeBytes(&p.rr)
}

// Pooled reports whether the bytes WaitRead returned are in pooled memory,
// reused after Release.
func (p *PendingRead) Pooled() bool { return p.rr.Pooled() }

// Release frees the memory of a completed (waited for) read and makes p
// idle.
func (p *PendingRead) Release() {
	p.rr.Release()
	*p = PendingRead{}
}
