package latencyfs

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

// TestReadAtDeadlineStopsAtDeadline: a read of a latency file whose
// simulated latency (5 s) would pass its deadline returns at the deadline
// with vfs.ErrDeadlineExceeded; one whose deadline is far returns the bytes
// after its latency; neither changes the bytes of a later read.
func TestReadAtDeadlineStopsAtDeadline(t *testing.T) {
	mem := vfs.NewMem()
	data := bytes.Repeat([]byte("0123456789abcdef"), 256)
	writeFixture(t, mem, "f", data)
	lfs := New(mem, Options{ReadLatency: 5 * time.Second})
	f, err := lfs.Open("f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	buf := make([]byte, 16)
	n, err := vfs.ReadAtDeadline(f, buf, 16, start.Add(100*time.Millisecond))
	if el := time.Since(start); !errors.Is(err, vfs.ErrDeadlineExceeded) || n != 0 || el > 2*time.Second || el < 90*time.Millisecond {
		t.Fatalf("read with a 100ms deadline: %d, %v after %v", n, err, el)
	}
	fast := New(mem, Options{ReadLatency: 10 * time.Millisecond})
	g, err := fast.Open("f")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if n, err := vfs.ReadAtDeadline(g, buf, 16, time.Now().Add(time.Minute)); n != 16 || err != nil || !bytes.Equal(buf, data[16:32]) {
		t.Fatalf("read with a far deadline: %d %q %v", n, buf, err)
	}
}

// TestAsyncReaderRequestDeadline: through WrapAsyncReader over each inner
// reader, a request whose Deadline comes before its simulated completion
// completes at the deadline with vfs.ErrDeadlineExceeded, with the inner
// read reaped; a request of the same batch without a deadline completes
// after its latency with its bytes.
func TestAsyncReaderRequestDeadline(t *testing.T) {
	dir := testdir.New(t)
	name := vfs.Default.PathJoin(dir, "f")
	data := bytes.Repeat([]byte("abcdefghijklmnop"), 1024)
	writeFixture(t, vfs.Default, name, data)
	lfs := New(vfs.Default, Options{ReadLatency: 300 * time.Millisecond})
	f, err := lfs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, in := range innerReaders() {
		t.Run(in.name, func(t *testing.T) {
			r := lfs.WrapAsyncReader(in.make(t, vfs.AsyncOptions{}))
			defer r.Close()
			start := time.Now()
			reqs := []vfs.ReadRequest{
				{File: f, Off: 0, Buf: make([]byte, 16), Deadline: start.Add(50 * time.Millisecond)},
				{File: f, Off: 16, Buf: make([]byte, 16)},
			}
			b := r.Submit(reqs)
			i, _ := b.Next()
			el := time.Since(start)
			if i != 0 || !errors.Is(reqs[0].Err, vfs.ErrDeadlineExceeded) || reqs[0].N != 0 {
				t.Fatalf("first completion: request %d (%d, %v)", i, reqs[0].N, reqs[0].Err)
			}
			if el < 45*time.Millisecond || el > 250*time.Millisecond {
				t.Fatalf("the timed-out request completed after %v (deadline 50ms, latency 300ms)", el)
			}
			if err := b.Wait(); err == nil {
				t.Fatal("Wait: no error")
			}
			b.Release()
			if reqs[1].Err != nil || !bytes.Equal(reqs[1].Buf, data[16:32]) {
				t.Fatalf("request without deadline: %q %v", reqs[1].Buf, reqs[1].Err)
			}
		})
	}
}
