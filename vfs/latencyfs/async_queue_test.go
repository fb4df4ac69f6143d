package latencyfs

import (
	"bytes"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

// TestAsyncLatencyFSQueueDepth: through the latency FS, a read is in flight
// until its simulated completion, so a reader with queue depth 4 takes four
// rounds of latency for 16 reads, as it would on a device with that
// latency: over both inner readers alike, and whether the reader is wrapped
// (WrapAsyncReader holds a simulated queue slot until each deadline) or not
// (the reader's goroutines hold their slots while the file's ReadAt
// sleeps). Before, the io_uring reader freed a ring slot when the inner
// file's read completed, before the simulated deadline, so it had every
// read of the batch in flight at once (one round) while the portable reader
// took four: benchmarks over the latency FS gave io_uring unbounded
// parallelism.
func TestAsyncLatencyFSQueueDepth(t *testing.T) {
	dir := testdir.New(t)
	name := vfs.Default.PathJoin(dir, "f")
	data := bytes.Repeat([]byte("0123456789abcdef"), 1024)
	writeFixture(t, vfs.Default, name, data)
	const lat = 20 * time.Millisecond
	lfs := New(vfs.Default, Options{ReadLatency: lat})
	f, err := lfs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, tr := range testReaders(lfs) {
		t.Run(tr.name, func(t *testing.T) {
			r := tr.make(t, vfs.AsyncOptions{QueueDepth: 4})
			defer r.Close()
			reqs := make([]vfs.ReadRequest, 16)
			for i := range reqs {
				reqs[i] = vfs.ReadRequest{File: f, Off: int64(i) * 1000, Buf: make([]byte, 1000)}
			}
			start := time.Now()
			if err := r.MultiRead(reqs); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			for i, req := range reqs {
				if req.N != 1000 || !bytes.Equal(req.Buf, data[req.Off:req.Off+1000]) {
					t.Fatalf("request %d: %d, %v", i, req.N, req.Err)
				}
			}
			if took < 4*lat {
				t.Fatalf("16 reads at queue depth 4 with %v latency took %v, less than 4 rounds (%v)", lat, took, 4*lat)
			}
			if took > 12*lat {
				t.Fatalf("16 reads at queue depth 4 with %v latency took %v", lat, took)
			}
		})
	}
}
