package vfs

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"
)

// TestAsyncReaderPerRequestErrors submits one batch, larger than the queue
// depth, of reads of an OS file and of a file whose reads fail (as a
// fault-injecting FS's do; errorfs tests that FS itself): requests of the
// failing file fail with its error, the others (including short reads at
// the end of the file) complete as ReadAt would, each on its own, and
// MultiRead reports the first error by index.
func TestAsyncReaderPerRequestErrors(t *testing.T) {
	dir := testDir(t)
	data := bytes.Repeat([]byte("0123456789abcdef"), 1000) // 16000 bytes
	for _, n := range []string{"good.sst", "bad.sst"} {
		writeFile(t, Default, Default.PathJoin(dir, n), string(data))
	}
	good, err := Default.Open(Default.PathJoin(dir, "good.sst"))
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	badInner, err := Default.Open(Default.PathJoin(dir, "bad.sst"))
	if err != nil {
		t.Fatal(err)
	}
	defer badInner.Close()
	bad := failingFile{badInner}
	for _, tr := range asyncTestReaders() {
		t.Run(tr.name, func(t *testing.T) {
			r := tr.make(t, AsyncOptions{QueueDepth: 4})
			defer r.Close()
			reqs := make([]ReadRequest, 40)
			for i := range reqs {
				f := good
				if i%3 == 1 {
					f = bad
				}
				off := int64(i * 397 % 15000)
				if i%5 == 4 {
					off = int64(len(data) - 100) // a short read at the end
				}
				reqs[i] = ReadRequest{File: f, Off: off, Buf: make([]byte, 1000)}
			}
			err := r.MultiRead(reqs)
			if !errors.Is(err, errReadFailed) {
				t.Fatalf("MultiRead: %v, want the injected error of request 1", err)
			}
			for i, req := range reqs {
				switch {
				case req.File == bad:
					if !errors.Is(req.Err, errReadFailed) || req.N != 0 {
						t.Fatalf("request %d (bad file): %d, %v", i, req.N, req.Err)
					}
				case req.Off == int64(len(data)-100):
					if req.N != 100 || req.Err != io.EOF || !bytes.Equal(req.Buf[:100], data[len(data)-100:]) {
						t.Fatalf("request %d (short): %d, %v", i, req.N, req.Err)
					}
				default:
					if req.N != 1000 || req.Err != nil || !bytes.Equal(req.Buf, data[req.Off:req.Off+1000]) {
						t.Fatalf("request %d: %d, %v", i, req.N, req.Err)
					}
				}
			}
		})
	}
}

// TestAsyncReaderDeepBatchOverlaps: a batch of slow reads four times the
// queue depth completes, with QueueDepth reads overlapping: it takes about
// four delays, not one per read.
func TestAsyncReaderDeepBatchOverlaps(t *testing.T) {
	f := mustTempFile(t, bytes.Repeat([]byte("x"), 1<<16))
	const delay = 20 * time.Millisecond
	slow := &slowFile{File: f, delay: delay}
	for _, tr := range asyncTestReaders() {
		t.Run(tr.name, func(t *testing.T) {
			r := tr.make(t, AsyncOptions{QueueDepth: 8})
			defer r.Close()
			reqs := make([]ReadRequest, 32)
			for i := range reqs {
				reqs[i] = ReadRequest{File: slow, Off: int64(i) * 100, Buf: make([]byte, 100)}
			}
			start := time.Now()
			b := r.Submit(reqs)
			seen := 0
			for {
				i, ok := b.Next()
				if !ok {
					break
				}
				if reqs[i].N != 100 || reqs[i].Err != nil {
					t.Fatalf("request %d: %d, %v", i, reqs[i].N, reqs[i].Err)
				}
				seen++
			}
			took := time.Since(start)
			b.Release()
			if seen != len(reqs) {
				t.Fatalf("Next returned %d of %d", seen, len(reqs))
			}
			if took < delay || took > 16*delay {
				t.Fatalf("32 reads of %v at queue depth 8 took %v", delay, took)
			}
		})
	}
}

// TestAsyncSubmitReturnsAtOnce: Submit of a batch larger than the queue
// depth returns before the reads complete, as the contract says; the reads
// beyond the depth start as earlier ones finish. Before, the portable
// reader's Submit blocked until all but QueueDepth reads had finished. Every
// ReadAt here blocks until the test opens its gate, so a Submit that waits
// for a read never returns (no timing is involved). The io_uring reader's
// ring reads are the exception: Submit waits for a ring slot, as it would
// for a real device's; a gateFile is not an OS file, so that reader reads
// it on goroutines.
func TestAsyncSubmitReturnsAtOnce(t *testing.T) {
	f := mustTempFile(t, bytes.Repeat([]byte("y"), 1<<16))
	for _, tr := range asyncTestReaders() {
		t.Run(tr.name, func(t *testing.T) {
			gate := &gateFile{File: f, open: make(chan struct{})}
			r := tr.make(t, AsyncOptions{QueueDepth: 4})
			defer r.Close()
			reqs := make([]ReadRequest, 16)
			for i := range reqs {
				reqs[i] = ReadRequest{File: gate, Off: int64(i) * 10, Buf: make([]byte, 10)}
			}
			submitted := make(chan *ReadBatch, 1)
			go func() { submitted <- r.Submit(reqs) }()
			var b *ReadBatch
			select {
			case b = <-submitted:
			case <-time.After(10 * time.Second):
				close(gate.open)
				t.Fatal("Submit of 16 reads at queue depth 4 waited for reads that cannot complete")
			}
			close(gate.open)
			if err := b.Wait(); err != nil {
				t.Fatal(err)
			}
			for i, req := range reqs {
				if req.N != 10 || !bytes.Equal(req.Buf, []byte("yyyyyyyyyy")) {
					t.Fatalf("request %d: %d, %v", i, req.N, req.Err)
				}
			}
			b.Release()
		})
	}
}

// errReadFailed is the error of a failingFile's reads.
var errReadFailed = errors.New("shale: test: read failed")

// failingFile fails every ReadAt with errReadFailed.
type failingFile struct{ File }

func (failingFile) ReadAt([]byte, int64) (int, error) { return 0, errReadFailed }

// gateFile blocks every ReadAt until open is closed.
type gateFile struct {
	File
	open chan struct{}
}

func (g *gateFile) ReadAt(p []byte, off int64) (int, error) {
	<-g.open
	return g.File.ReadAt(p, off)
}
