package vfs

import (
	"errors"
	"os"
	"testing"
	"time"
)

// TestURingLinkTimeoutCancelsRead reads, through the ring, the read end of
// a pipe nobody writes to: a read that would block forever. Its Deadline
// must cancel it in the kernel (IORING_OP_LINK_TIMEOUT), complete the
// request with ErrDeadlineExceeded soon after the deadline, and give every
// slot back; the ring then reads on as before.
func TestURingLinkTimeoutCancelsRead(t *testing.T) {
	r := newTestURing(t, AsyncOptions{QueueDepth: 4})
	defer r.Close()
	if !r.ring.linkTimeout {
		t.Skip("the kernel lacks IORING_OP_LINK_TIMEOUT")
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	pipe := &osFile{file: pr}
	defer pipe.Close()
	for round := range 3 {
		start := time.Now()
		reqs := []ReadRequest{{File: pipe, Buf: make([]byte, 10), Deadline: start.Add(100 * time.Millisecond)}}
		b := r.Submit(reqs)
		err := b.Wait()
		b.Release()
		el := time.Since(start)
		if !errors.Is(err, ErrDeadlineExceeded) {
			t.Fatalf("round %d: err %v, want ErrDeadlineExceeded", round, err)
		}
		if el < 90*time.Millisecond || el > 2*time.Second {
			t.Fatalf("round %d: the read returned after %v, deadline 100ms", round, el)
		}
	}
	r.slotMu.Lock()
	free := len(r.free)
	r.slotMu.Unlock()
	if free != len(r.slots) {
		t.Fatalf("%d of %d slots free after the reads timed out", free, len(r.slots))
	}
	// The pipe and the ring still work: a read with a far deadline gets
	// what is written.
	if _, err := pw.Write([]byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	reqs := []ReadRequest{{File: pipe, Buf: make([]byte, 10), Deadline: time.Now().Add(time.Minute)}}
	if err := r.MultiRead(reqs); err != nil || string(reqs[0].Buf) != "0123456789" {
		t.Fatalf("read after the timeouts: %q, %v", reqs[0].Buf, err)
	}
}
