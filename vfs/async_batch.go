package vfs

import "sync"

// readBatchPool recycles ReadBatches (and their completion channels) handed
// back with Release, so that a Submit+Wait+Release cycle does not allocate.
var readBatchPool sync.Pool

// minPooledBatch is the smallest completion channel a recycled batch gets,
// so that one pooled batch serves the common batch sizes.
const minPooledBatch = 64

// acquireReadBatch returns a batch for reqs, recycled when one with room
// enough was released.
func acquireReadBatch(reqs []ReadRequest) *ReadBatch {
	if b, ok := readBatchPool.Get().(*ReadBatch); ok {
		if cap(b.done) >= len(reqs) {
			b.reqs, b.returned = reqs, 0
			b.pending.Store(int32(len(reqs)))
			return b
		}
	}
	b := &ReadBatch{reqs: reqs, done: make(chan int, max(len(reqs), minPooledBatch)), all: make(chan struct{}, 1)}
	b.pending.Store(int32(len(reqs)))
	return b
}

// Release hands a finished batch back for reuse by a later Submit. It is
// optional; it does nothing unless Next or Wait has returned every request.
// The batch must not be used after Release.
func (b *ReadBatch) Release() {
	if b.returned < 0 || b.returned != len(b.reqs) {
		return
	}
	// Every request has been received from done, so no reader goroutine
	// holds the batch any more: the implementations send on done last.
	b.reqs = nil
	b.returned = -1 // a second Release is a no-op
	// A batch consumed through Next leaves the token of its last completion
	// in all; drop it so the next user starts empty.
	select {
	case <-b.all:
	default:
	}
	readBatchPool.Put(b)
}
