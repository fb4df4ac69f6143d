package latencyfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// testReader makes one kind of AsyncReader for the tests.
type testReader struct {
	name string
	// make returns a fresh reader, or skips t saying why it cannot.
	make func(t *testing.T, o vfs.AsyncOptions) vfs.AsyncReader
}

// innerReaders lists the portable reader and, on Linux, the io_uring one
// (skipped where the kernel refuses it).
func innerReaders() []testReader {
	rs := []testReader{{name: "portable", make: func(t *testing.T, o vfs.AsyncOptions) vfs.AsyncReader {
		o.DisableIOUring = true
		return vfs.NewAsyncReader(o)
	}}}
	if runtime.GOOS == "linux" {
		rs = append(rs, testReader{name: "io_uring", make: func(t *testing.T, o vfs.AsyncOptions) vfs.AsyncReader {
			r := vfs.NewAsyncReader(o)
			if r.Kind() != "io_uring" {
				r.Close()
				t.Skip("io_uring unavailable")
			}
			return r
		}})
	}
	return rs
}

// testReaders lists each inner reader as it is and wrapped by
// fs.WrapAsyncReader.
func testReaders(fs *FS) []testReader {
	var rs []testReader
	for _, in := range innerReaders() {
		rs = append(rs, in, testReader{name: in.name + "-wrapped", make: func(t *testing.T, o vfs.AsyncOptions) vfs.AsyncReader {
			return fs.WrapAsyncReader(in.make(t, o))
		}})
	}
	return rs
}

// TestAsyncReaderDeadlines: through WrapAsyncReader, every read of a
// latency file completes no earlier than its latency after Submit, with the
// right bytes, and the inner io_uring reader reads the OS file beneath
// natively (one SQE per read), where unwrapped it would read the latency
// file through its ReadAt. The wrapper counts one batch per Submit.
func TestAsyncReaderDeadlines(t *testing.T) {
	dir := testdir.New(t)
	name := vfs.Default.PathJoin(dir, "f")
	data := bytes.Repeat([]byte("abcdefghijklmnop"), 1024)
	writeFixture(t, vfs.Default, name, data)
	const lat = 20 * time.Millisecond
	lfs := New(vfs.Default, Options{ReadLatency: lat})
	f, err := lfs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, in := range innerReaders() {
		t.Run(in.name, func(t *testing.T) {
			inner := in.make(t, vfs.AsyncOptions{})
			r := lfs.WrapAsyncReader(inner)
			defer r.Close()
			if r.Kind() != inner.Kind() || r.QueueDepth() != inner.QueueDepth() {
				t.Fatalf("wrapped reader: Kind %q depth %d, inner %q %d", r.Kind(), r.QueueDepth(), inner.Kind(), inner.QueueDepth())
			}
			before := inner.Stats()
			reqs := make([]vfs.ReadRequest, 8)
			for i := range reqs {
				reqs[i] = vfs.ReadRequest{File: f, Off: int64(i) * 1000, Buf: make([]byte, 1000)}
			}
			start := time.Now()
			b := r.Submit(reqs)
			for {
				i, ok := b.Next()
				if !ok {
					break
				}
				if d := time.Since(start); d < lat {
					t.Fatalf("read %d completed %v after Submit, before its latency %v", i, d, lat)
				}
				if req := reqs[i]; req.N != 1000 || req.Err != nil || !bytes.Equal(req.Buf, data[req.Off:req.Off+1000]) {
					t.Fatalf("request %d: %d, %v", i, req.N, req.Err)
				}
			}
			b.Release()
			after := inner.Stats()
			if in.name == "io_uring" && after.SQEs-before.SQEs != uint64(len(reqs)) {
				t.Fatalf("the inner io_uring reader sent %d SQEs for %d reads", after.SQEs-before.SQEs, len(reqs))
			}
			if s := r.Stats(); s.Batches != 1 || s.Reads != uint64(len(reqs)) || s.BytesRead != 8000 {
				t.Fatalf("wrapped reader's stats %+v", s)
			}
		})
	}
}

// recordingReader passes batches to an AsyncReader and records the files
// of their requests.
type recordingReader struct {
	vfs.AsyncReader
	mu    sync.Mutex
	files []vfs.File
}

func (r *recordingReader) Submit(reqs []vfs.ReadRequest) *vfs.ReadBatch {
	r.mu.Lock()
	for i := range reqs {
		r.files = append(r.files, reqs[i].File)
	}
	r.mu.Unlock()
	return r.AsyncReader.Submit(reqs)
}

// TestAsyncReaderUnwraps: the wrapped reader hands its inner reader the
// file each latency file wraps, and a file of another FS (here another
// latency FS, whose own ReadAt then delays it) as it is; the bytes, short
// reads and errors are those of ReadAt.
func TestAsyncReaderUnwraps(t *testing.T) {
	mem := vfs.NewMem()
	data := bytes.Repeat([]byte("0123456789"), 100)
	writeFixture(t, mem, "/f", data)
	lfs := New(mem, Options{ReadLatency: time.Millisecond})
	other := New(mem, Options{ReadLatency: time.Millisecond})
	lf, _ := lfs.Open("/f")
	of, _ := other.Open("/f")
	rec := &recordingReader{AsyncReader: vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})}
	r := lfs.WrapAsyncReader(rec)
	defer r.Close()
	reqs := []vfs.ReadRequest{
		{File: lf, Off: 10, Buf: make([]byte, 20)},
		{File: of, Off: 30, Buf: make([]byte, 20)},
		{File: lf, Off: 990, Buf: make([]byte, 20)}, // short: io.EOF
		{File: lf, Off: -1, Buf: make([]byte, 20)},  // an error
		{File: lf, Off: 0, Buf: nil},                // empty
	}
	r.MultiRead(reqs)
	mf, err := mem.Open("/f")
	if err != nil {
		t.Fatal(err)
	}
	for i, req := range reqs {
		want := make([]byte, len(req.Buf))
		n, err := mf.ReadAt(want, req.Off)
		if req.N != n || fmt.Sprint(req.Err) != fmt.Sprint(err) || !bytes.Equal(req.Buf[:req.N], want[:n]) {
			t.Errorf("request %d: %d, %v; ReadAt gives %d, %v", i, req.N, req.Err, n, err)
		}
	}
	if reqs[2].Err != io.EOF {
		t.Errorf("short read: %v, want io.EOF", reqs[2].Err)
	}
	if len(rec.files) != len(reqs) {
		t.Fatalf("inner reader got %d requests, want %d", len(rec.files), len(reqs))
	}
	innerF := lf.(*latencyFile).File
	for i, f := range rec.files {
		want := innerF
		if reqs[i].File == of {
			want = of
		}
		if f != want {
			t.Errorf("request %d reached the inner reader with %T %p, want %T %p", i, f, f, want, want)
		}
	}
}

// TestAsyncReaderChains reads through chains of wrapping file systems, over
// MemFS and the OS, with every reader (each inner one, as it is and
// wrapped by the outermost FS when it is a latency FS): a latency FS over a
// fault-injecting one (injected read faults reach each request, reads
// complete no earlier than the latency), a fault-injecting FS over a
// latency FS (not an AsyncReaderWrapper: reads go through the files' ReadAt
// and are delayed all the same), and a latency FS over another (the inner
// one wraps first; each read waits for the later of the two deadlines).
func TestAsyncReaderChains(t *testing.T) {
	const lat = 15 * time.Millisecond
	data := bytes.Repeat([]byte("chained!"), 2048)
	dir := testdir.New(t)
	for _, base := range []struct {
		name string
		fs   vfs.FS
		dir  string
	}{{"mem", vfs.NewMem(), "/"}, {"os", vfs.Default, dir}} {
		good, bad := base.fs.PathJoin(base.dir, "good.sst"), base.fs.PathJoin(base.dir, "bad.sst")
		writeFixture(t, base.fs, good, data)
		writeFixture(t, base.fs, bad, data)
		type chain struct {
			name   string
			fs     vfs.FS
			faults bool
			lat    time.Duration
		}
		var chains []chain
		{
			ffs := errorfs.New(base.fs, 1)
			ffs.AddRule(errorfs.Rule{Op: errorfs.OpRead, PathPattern: "bad.*"})
			chains = append(chains, chain{"latency/error", New(ffs, Options{ReadLatency: lat}), true, lat})
		}
		{
			ffs := errorfs.New(New(base.fs, Options{ReadLatency: lat}), 1)
			ffs.AddRule(errorfs.Rule{Op: errorfs.OpRead, PathPattern: "bad.*"})
			chains = append(chains, chain{"error/latency", ffs, true, lat})
		}
		chains = append(chains, chain{"latency/latency", New(New(base.fs, Options{ReadLatency: lat}), Options{ReadLatency: lat / 3}), false, lat})
		for _, c := range chains {
			gf, err := c.fs.Open(good)
			if err != nil {
				t.Fatal(err)
			}
			bf, err := c.fs.Open(bad)
			if err != nil {
				t.Fatal(err)
			}
			readers := innerReaders()
			if l, ok := c.fs.(*FS); ok {
				readers = testReaders(l)
			}
			for _, tr := range readers {
				t.Run(fmt.Sprintf("%s/%s/%s", base.name, c.name, tr.name), func(t *testing.T) {
					r := tr.make(t, vfs.AsyncOptions{QueueDepth: 8})
					defer r.Close()
					reqs := make([]vfs.ReadRequest, 24)
					for i := range reqs {
						f := gf
						if i%4 == 1 {
							f = bf
						}
						reqs[i] = vfs.ReadRequest{File: f, Off: int64(i) * 512, Buf: make([]byte, 512)}
					}
					start := time.Now()
					err := r.MultiRead(reqs)
					if took := time.Since(start); took < c.lat {
						t.Fatalf("24 reads took %v, less than the latency %v", took, c.lat)
					}
					if c.faults && !errors.Is(err, errorfs.ErrInjected) {
						t.Fatalf("MultiRead: %v, want the injected fault of request 1", err)
					}
					if !c.faults && err != nil {
						t.Fatal(err)
					}
					for i, req := range reqs {
						if c.faults && req.File == bf {
							if req.N != 0 || !errors.Is(req.Err, errorfs.ErrInjected) {
								t.Fatalf("request %d (bad file): %d, %v", i, req.N, req.Err)
							}
							continue
						}
						if req.N != 512 || req.Err != nil || !bytes.Equal(req.Buf, data[req.Off:req.Off+512]) {
							t.Fatalf("request %d: %d, %v", i, req.N, req.Err)
						}
					}
				})
			}
			gf.Close()
			bf.Close()
		}
	}
}

// TestAsyncReaderSubmitReturnsAtOnce: with the simulated queue full, Submit
// still returns before the reads complete, as the AsyncReader contract says;
// the reads beyond the queue depth start as slots free up.
func TestAsyncReaderSubmitReturnsAtOnce(t *testing.T) {
	mem := vfs.NewMem()
	writeFixture(t, mem, "/f", make([]byte, 1<<16))
	const lat = 200 * time.Millisecond // long, so a loaded machine cannot make Submit look slow
	lfs := New(mem, Options{ReadLatency: lat})
	f, _ := lfs.Open("/f")
	for _, in := range innerReaders() {
		t.Run(in.name, func(t *testing.T) {
			r := lfs.WrapAsyncReader(in.make(t, vfs.AsyncOptions{QueueDepth: 2}))
			defer r.Close()
			reqs := make([]vfs.ReadRequest, 6)
			for i := range reqs {
				reqs[i] = vfs.ReadRequest{File: f, Off: int64(i) * 100, Buf: make([]byte, 100)}
			}
			start := time.Now()
			b := r.Submit(reqs)
			if d := time.Since(start); d > lat/2 {
				t.Fatalf("Submit of 6 reads at queue depth 2 took %v", d)
			}
			if err := b.Wait(); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d < 3*lat {
				t.Fatalf("6 reads at queue depth 2 took %v, less than 3 rounds", d)
			}
		})
	}
}

// TestAsyncReaderClose: Close waits for the reads in flight and closes the
// inner reader; a Submit after Close reads synchronously, still delayed, and
// a second Close returns the first one's result.
func TestAsyncReaderClose(t *testing.T) {
	mem := vfs.NewMem()
	data := bytes.Repeat([]byte("z"), 4096)
	writeFixture(t, mem, "/f", data)
	const lat = 20 * time.Millisecond
	lfs := New(mem, Options{ReadLatency: lat})
	f, _ := lfs.Open("/f")
	for _, in := range innerReaders() {
		t.Run(in.name, func(t *testing.T) {
			r := lfs.WrapAsyncReader(in.make(t, vfs.AsyncOptions{QueueDepth: 2}))
			reqs := make([]vfs.ReadRequest, 5)
			for i := range reqs {
				reqs[i] = vfs.ReadRequest{File: f, Off: int64(i) * 100, Buf: make([]byte, 100)}
			}
			b := r.Submit(reqs)
			if err := r.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			// Close waited for every request: none is outstanding.
			for range reqs {
				select {
				case <-waitNext(b):
				case <-time.After(time.Second):
					t.Fatal("a request submitted before Close was not complete after it")
				}
			}
			if err := b.Wait(); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := r.MultiRead(reqs[:1]); err != nil || reqs[0].N != 100 {
				t.Fatalf("MultiRead after Close: %d, %v", reqs[0].N, err)
			}
			if d := time.Since(start); d < lat {
				t.Fatalf("a read after Close took %v, less than the latency", d)
			}
			if err := r.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
		})
	}
}

// waitNext returns a channel closed once b's next request completes.
func waitNext(b *vfs.ReadBatch) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		b.Next()
		close(c)
	}()
	return c
}
