package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// asyncTestReader makes one kind of AsyncReader for the shared tests.
type asyncTestReader struct {
	name string
	// make returns a fresh reader, or skips t saying why it cannot.
	make func(t *testing.T, o AsyncOptions) AsyncReader
}

// asyncTestReaders lists the portable reader and the platform's own
// (platformAsyncTestReaders, per OS).
func asyncTestReaders() []asyncTestReader {
	portable := asyncTestReader{name: "portable", make: func(t *testing.T, o AsyncOptions) AsyncReader {
		o.DisableIOUring = true
		r := NewAsyncReader(o)
		if r.Kind() != "portable" {
			t.Fatalf("DisableIOUring gave Kind %q, want portable", r.Kind())
		}
		return r
	}}
	return append([]asyncTestReader{portable}, platformAsyncTestReaders()...)
}

// testSeed returns SHALE_SEED when set (to replay a failure), else a fresh
// seed; it logs the seed.
func testSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SHALE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("bad SHALE_SEED %q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with SHALE_SEED=%d)", seed, seed)
	return seed
}

// slowFile wraps a file, as the files of a wrapping FS do, and sleeps in
// each ReadAt; reads counts the calls.
type slowFile struct {
	File
	delay time.Duration
	reads atomic.Int64
}

func (s *slowFile) ReadAt(p []byte, off int64) (int, error) {
	s.reads.Add(1)
	time.Sleep(s.delay)
	return s.File.ReadAt(p, off)
}

// asyncTestFile is a file of the random test with its expected content.
type asyncTestFile struct {
	f    File
	data []byte
}

// makeAsyncTestFiles writes files of random sizes (an empty one, odd sizes,
// up to 256 KiB) on the OS file system and in a MemFS, plus a slowFile over
// an OS file.
func makeAsyncTestFiles(t *testing.T, rng *rand.Rand) []asyncTestFile {
	dir := testDir(t)
	mem := NewMem()
	var files []asyncTestFile
	for i := range 6 {
		size := 0
		switch i {
		case 0:
		case 1:
			size = 1 + rng.IntN(100)
		default:
			size = rng.IntN(256 << 10)
		}
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		var fs FS = Default
		name := filepath.Join(dir, fmt.Sprintf("f%d", i))
		if i == 5 {
			fs, name = mem, fmt.Sprintf("f%d", i)
		}
		w, err := fs.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		f, err := fs.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		files = append(files, asyncTestFile{f: f, data: data})
	}
	files = append(files, asyncTestFile{f: &slowFile{File: files[3].f, delay: 50 * time.Microsecond}, data: files[3].data})
	return files
}

// sentinel fills buffers before reads, so that bytes written past N show.
const sentinel = 0xA5

// randomRequests makes n requests at random offsets and lengths: inside,
// across and past the end of the file, zero length, and now and then a
// negative offset.
func randomRequests(rng *rand.Rand, files []asyncTestFile, n int) []ReadRequest {
	reqs := make([]ReadRequest, n)
	for i := range reqs {
		f := files[rng.IntN(len(files))]
		size := len(f.data)
		var off int64
		switch rng.IntN(10) {
		case 0:
			off = int64(size + rng.IntN(5000)) // at or past the end
		case 1:
			off = -1 - int64(rng.IntN(10))
		default:
			off = int64(rng.IntN(size + 1))
		}
		length := rng.IntN(20 << 10)
		if rng.IntN(10) == 0 {
			length = 0
		}
		buf := bytes.Repeat([]byte{sentinel}, length)
		reqs[i] = ReadRequest{File: f.f, Off: off, Buf: buf}
	}
	return reqs
}

// checkAgainstReadAt compares a completed request with what ReadAt returns
// for the same file, offset and length, and with the file's content.
func checkAgainstReadAt(seed uint64, files []asyncTestFile, req *ReadRequest) error {
	want := bytes.Repeat([]byte{sentinel}, len(req.Buf))
	wantN, wantErr := req.File.ReadAt(want, req.Off)
	if req.N != wantN || !sameError(req.Err, wantErr) {
		return fmt.Errorf("seed %d: read off %d len %d: got (%d, %v), ReadAt gives (%d, %v)",
			seed, req.Off, len(req.Buf), req.N, req.Err, wantN, wantErr)
	}
	if !bytes.Equal(req.Buf, want) {
		return fmt.Errorf("seed %d: read off %d len %d: bytes differ from ReadAt's", seed, req.Off, len(req.Buf))
	}
	for _, f := range files {
		if f.f == req.File && req.Off >= 0 && req.N > 0 && !bytes.Equal(req.Buf[:req.N], f.data[req.Off:req.Off+int64(req.N)]) {
			return fmt.Errorf("seed %d: read off %d len %d: bytes differ from the file's content", seed, req.Off, len(req.Buf))
		}
	}
	return nil
}

// checkAll checks every request of a batch with checkAgainstReadAt.
func checkAll(seed uint64, files []asyncTestFile, reqs []ReadRequest) error {
	for i := range reqs {
		if err := checkAgainstReadAt(seed, files, &reqs[i]); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
	}
	return nil
}

// sameError says two read errors are the same to a caller: both nil, or
// the same message and the same answer to errors.Is(io.EOF).
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Error() == b.Error() && errors.Is(a, io.EOF) == errors.Is(b, io.EOF)
}

// TestAsyncReaderMatchesReadAt submits random batches from many goroutines
// and checks each result against ReadAt, and that Next returns every index
// exactly once.
func TestAsyncReaderMatchesReadAt(t *testing.T) {
	for _, tr := range asyncTestReaders() {
		t.Run(tr.name, func(t *testing.T) {
			seed := testSeed(t)
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 1))
			files := makeAsyncTestFiles(t, rng)
			r := tr.make(t, AsyncOptions{QueueDepth: 32})
			defer r.Close()

			const goroutines, batches = 6, 12
			var wg sync.WaitGroup
			var totalReads atomic.Uint64
			errc := make(chan error, goroutines)
			for g := range goroutines {
				grng := rand.New(rand.NewPCG(seed, uint64(g)+2))
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := range batches {
						reqs := randomRequests(grng, files, 1+grng.IntN(100))
						totalReads.Add(uint64(len(reqs)))
						b := r.Submit(reqs)
						if b.Len() != len(reqs) {
							errc <- fmt.Errorf("Len %d, want %d", b.Len(), len(reqs))
							return
						}
						if k%2 == 0 {
							b.Wait()
						} else {
							seen := make([]bool, len(reqs))
							for {
								i, ok := b.Next()
								if !ok {
									break
								}
								if i < 0 || i >= len(reqs) || seen[i] {
									errc <- fmt.Errorf("seed %d: Next returned %d twice or out of range", seed, i)
									return
								}
								seen[i] = true
							}
							for i, s := range seen {
								if !s {
									errc <- fmt.Errorf("seed %d: Next never returned %d", seed, i)
									return
								}
							}
						}
						b.Release()
						if err := checkAll(seed, files, reqs); err != nil {
							errc <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Fatal(err)
			}
			if st := r.Stats(); st.Reads != totalReads.Load() || st.Batches != goroutines*batches {
				t.Fatalf("Stats %+v, want Reads %d Batches %d", st, totalReads.Load(), goroutines*batches)
			}
		})
	}
}

// TestAsyncReaderMultiRead checks MultiRead's error: the first by index.
func TestAsyncReaderMultiRead(t *testing.T) {
	for _, tr := range asyncTestReaders() {
		t.Run(tr.name, func(t *testing.T) {
			files := makeAsyncTestFiles(t, rand.New(rand.NewPCG(1, 2)))
			r := tr.make(t, AsyncOptions{})
			defer r.Close()
			f := files[2]
			full := func() []byte { return make([]byte, min(len(f.data), 100)) }
			ok := []ReadRequest{{File: f.f, Off: 0, Buf: full()}, {File: f.f, Off: 0, Buf: full()}}
			if err := r.MultiRead(ok); err != nil || ok[1].N != len(ok[1].Buf) {
				t.Fatalf("MultiRead inside the file: %v, N %d", err, ok[1].N)
			}
			bad := []ReadRequest{
				{File: f.f, Off: 0, Buf: full()},
				{File: f.f, Off: int64(len(f.data)) + 10, Buf: make([]byte, 10)},
				{File: f.f, Off: -5, Buf: make([]byte, 10)},
			}
			if err := r.MultiRead(bad); err != io.EOF {
				t.Fatalf("MultiRead with a read past the end: %v, want io.EOF (first by index)", err)
			}
			if bad[2].Err == nil {
				t.Fatal("negative offset read succeeded")
			}
		})
	}
}

// TestAsyncReaderBadFiles reads a closed file, a write-only file and a
// directory: each must fail as ReadAt fails.
func TestAsyncReaderBadFiles(t *testing.T) {
	dir := testDir(t)
	name := filepath.Join(dir, "f")
	if err := os.WriteFile(name, []byte("hello, world"), 0o644); err != nil {
		t.Fatal(err)
	}
	closed, err := Default.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	wo, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer wo.Close()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	bad := []File{closed, &osFile{file: wo}, &osFile{file: d}}
	for _, tr := range asyncTestReaders() {
		t.Run(tr.name, func(t *testing.T) {
			r := tr.make(t, AsyncOptions{})
			defer r.Close()
			reqs := make([]ReadRequest, len(bad))
			for i, f := range bad {
				reqs[i] = ReadRequest{File: f, Buf: make([]byte, 5)}
			}
			r.Submit(reqs).Wait()
			for i := range reqs {
				_, want := bad[i].ReadAt(make([]byte, 5), 0)
				if want == nil || !sameError(reqs[i].Err, want) || reqs[i].N != 0 {
					t.Errorf("file %d: got (%d, %v), ReadAt gives %v", i, reqs[i].N, reqs[i].Err, want)
				}
				var pe *os.PathError
				if !errors.As(reqs[i].Err, &pe) {
					t.Errorf("file %d: error %T is not an *os.PathError", i, reqs[i].Err)
				}
			}
			if !errors.Is(reqs[0].Err, os.ErrClosed) {
				t.Errorf("closed file: %v, want os.ErrClosed", reqs[0].Err)
			}
		})
	}
}

// TestAsyncReaderCloseInFlight closes the reader while goroutines submit
// batches of slow reads; every batch still completes correctly, before and
// after Close, and Close may be called twice.
func TestAsyncReaderCloseInFlight(t *testing.T) {
	for _, tr := range asyncTestReaders() {
		t.Run(tr.name, func(t *testing.T) {
			seed := testSeed(t)
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 3))
			files := makeAsyncTestFiles(t, rng)
			slow := &slowFile{File: files[4].f, delay: 2 * time.Millisecond}
			files = append(files, asyncTestFile{f: slow, data: files[4].data})
			r := tr.make(t, AsyncOptions{QueueDepth: 16})
			var wg sync.WaitGroup
			errc := make(chan error, 4)
			started := make(chan struct{}, 4)
			for g := range 4 {
				grng := rand.New(rand.NewPCG(seed, uint64(g)+10))
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := range 8 {
						reqs := randomRequests(grng, files, 40)
						reqs[0].File = slow // at least one read in flight for a while
						b := r.Submit(reqs)
						if k == 0 {
							started <- struct{}{}
						}
						b.Wait()
						if err := checkAll(seed, files, reqs); err != nil {
							errc <- err
							return
						}
					}
				}()
			}
			for range 4 {
				<-started
			}
			if err := r.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Fatal(err)
			}
			if err := r.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			reqs := randomRequests(rng, files, 30)
			r.Submit(reqs).Wait()
			if err := checkAll(seed, files, reqs); err != nil {
				t.Fatalf("after Close: %v", err)
			}
		})
	}
}

// TestAsyncReaderWrappedFile: a file that wraps an OS file (as the files of
// a fault-injecting or latency FS do) is read through its own ReadAt, once
// per request, by every reader: the io_uring reader never reads the OS file
// beneath it, so the wrapper keeps its say over every read.
func TestAsyncReaderWrappedFile(t *testing.T) {
	for _, tr := range asyncTestReaders() {
		t.Run(tr.name, func(t *testing.T) {
			files := makeAsyncTestFiles(t, rand.New(rand.NewPCG(4, 4)))
			slow := &slowFile{File: files[2].f, delay: 20 * time.Millisecond}
			r := tr.make(t, AsyncOptions{})
			defer r.Close()
			reqs := make([]ReadRequest, 8)
			for i := range reqs {
				reqs[i] = ReadRequest{File: slow, Off: int64(i * 10), Buf: make([]byte, 10)}
			}
			start := time.Now()
			b := r.Submit(reqs)
			for {
				i, ok := b.Next()
				if !ok {
					break
				}
				if now := time.Now(); now.Sub(start) < slow.delay {
					t.Fatalf("read %d completed %v after submission, before its delay %v", i, now.Sub(start), slow.delay)
				}
			}
			if got := slow.reads.Load(); got != int64(len(reqs)) {
				t.Fatalf("the wrapping file's ReadAt was called %d times, want %d", got, len(reqs))
			}
			if err := checkAll(0, files, reqs); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAsyncReaderEmptyBatch submits nothing.
func TestAsyncReaderEmptyBatch(t *testing.T) {
	for _, tr := range asyncTestReaders() {
		t.Run(tr.name, func(t *testing.T) {
			r := tr.make(t, AsyncOptions{})
			defer r.Close()
			b := r.Submit(nil)
			if _, ok := b.Next(); ok {
				t.Fatal("Next of an empty batch returned a request")
			}
			if err := b.Wait(); err != nil || b.Len() != 0 {
				t.Fatalf("Wait %v Len %d", err, b.Len())
			}
			b.Release()
			b.Release() // a second Release is a no-op, not a double put
		})
	}
}

// TestAsyncFallback checks that DisableIOUring gives the portable reader.
func TestAsyncFallback(t *testing.T) {
	r := NewAsyncReader(AsyncOptions{DisableIOUring: true})
	defer r.Close()
	if r.Kind() != "portable" {
		t.Fatalf("Kind %q with DisableIOUring, want portable", r.Kind())
	}

	// A kernel that refuses io_uring (seccomp, io_uring_disabled): the
	// portable reader, and one log line that says why.
	old := platformAsyncReader
	t.Cleanup(func() { platformAsyncReader = old })
	refused := errors.New("io_uring_setup: operation not permitted")
	platformAsyncReader = func(AsyncOptions) (AsyncReader, error) { return nil, refused }
	var logs []string
	r2 := NewAsyncReader(AsyncOptions{Logf: func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }})
	defer r2.Close()
	if r2.Kind() != "portable" {
		t.Fatalf("Kind %q when io_uring is refused, want portable", r2.Kind())
	}
	if len(logs) != 1 || !strings.Contains(logs[0], refused.Error()) {
		t.Fatalf("log lines %q: want one naming the refusal", logs)
	}
	// The fallback reads correctly.
	f := mustTempFile(t, []byte("hello, fallback"))
	reqs := []ReadRequest{{File: f, Off: 7, Buf: make([]byte, 8)}}
	if err := r2.MultiRead(reqs); err != nil || string(reqs[0].Buf) != "fallback" {
		t.Fatalf("fallback read: %q, %v", reqs[0].Buf, err)
	}
	// On other platforms there is no native reader: no log line.
	platformAsyncReader = func(AsyncOptions) (AsyncReader, error) { return nil, errNoPlatformAsync }
	logs = nil
	r3 := NewAsyncReader(AsyncOptions{Logf: func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }})
	defer r3.Close()
	if len(logs) != 0 {
		t.Fatalf("log lines %q on a platform without a native reader", logs)
	}
}

// mustTempFile writes data to a new file and opens it for reading.
func mustTempFile(t *testing.T, data []byte) File {
	t.Helper()
	name := Default.PathJoin(testDir(t), "data")
	w, err := Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	w.Close()
	f, err := Default.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestReadBatchRelease checks that Release recycles only finished batches.
func TestReadBatchRelease(t *testing.T) {
	reqs := make([]ReadRequest, 3)
	b := acquireReadBatch(reqs)
	b.complete(0)
	b.Next()
	b.Release() // not finished: must not be pooled
	if b.returned != 1 || b.reqs == nil {
		t.Fatal("Release of an unfinished batch changed it")
	}
	b.complete(1)
	b.complete(2)
	b.Wait()
	b.Release()
	if b.reqs != nil || b.returned != -1 {
		t.Fatal("Release of a finished batch did not reset it")
	}
}
