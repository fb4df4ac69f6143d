package latencyfs

import (
	"bytes"
	"errors"
	"math/big"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

// TestLatencyFSBandwidthNeverFaster: N reads of S bytes issued at once at
// B bytes/s finish transferring no earlier than N*S/B, for sizes and rates
// whose transfer time is not a whole number of nanoseconds. Before, each
// transfer was rounded down to the nanosecond, so the device ran faster
// than its cap (by up to 1ns per read: 1% for 100-byte reads at 1 GiB/s).
func TestLatencyFSBandwidthNeverFaster(t *testing.T) {
	for _, c := range []struct{ size, bw int64 }{
		{4096, 3 << 20},  // 1302083.33ns per read
		{100, 1 << 30},   // 93.13ns
		{1, 3},           // 333333333.33ns
		{8191, 1e9 + 7},  // just under 1 byte/ns
		{65536, 7 << 20}, // 8928571.43ns
	} {
		lfs, clock := newFakeLatencyFS(vfs.NewMem(), Options{ReadBandwidth: c.bw})
		t0 := clock.now()
		const reads = 1000
		var last time.Time
		for range reads {
			last = lfs.readDeadline(int(c.size))
		}
		// The exact time in ns is reads*size*1e9/bw; the deadline must be
		// at least its ceiling, and within a nanosecond of it.
		exact := new(big.Rat).SetFrac(big.NewInt(reads*c.size*1e9), big.NewInt(c.bw))
		got := new(big.Rat).SetInt64(int64(last.Sub(t0)))
		if got.Cmp(exact) < 0 {
			t.Errorf("%d reads of %d bytes at %d B/s took %v, less than %s ns", reads, c.size, c.bw, last.Sub(t0), exact.FloatString(2))
		}
		if over := new(big.Rat).Sub(got, exact); over.Cmp(big.NewRat(1, 1)) >= 0 {
			t.Errorf("%d reads of %d bytes at %d B/s took %v, over a nanosecond more than %s ns", reads, c.size, c.bw, last.Sub(t0), exact.FloatString(2))
		}
	}
}

// TestLatencyFSBandwidthRealTime times concurrent reads through the real
// clock: 64 reads of 16 KiB at 64 MiB/s take at least 15.6ms.
func TestLatencyFSBandwidthRealTime(t *testing.T) {
	mem := vfs.NewMem()
	writeFixture(t, mem, "/f", make([]byte, 1<<20))
	lfs := New(mem, Options{ReadLatency: 100 * time.Microsecond, ReadBandwidth: 64 << 20})
	f, err := lfs.Open("/f")
	if err != nil {
		t.Fatal(err)
	}
	const reads, size = 64, 16 << 10
	want := time.Duration(int64(reads*size) * int64(time.Second) / (64 << 20))
	start := time.Now()
	var wg sync.WaitGroup
	for i := range reads {
		wg.Go(func() {
			buf := make([]byte, size)
			if n, err := f.ReadAt(buf, int64(i)*size); n != size || err != nil {
				t.Errorf("read %d: %d, %v", i, n, err)
			}
		})
	}
	wg.Wait()
	if took := time.Since(start); took < want {
		t.Fatalf("%d reads of %d bytes at 64 MiB/s took %v, want >= %v", reads, size, took, want)
	}
}

// TestLatencyFSCloseWhileDelayed closes a file while reads of it are
// sleeping out their latency: each read returns the right bytes (the data
// was read before the sleep) or os.ErrClosed, never other bytes, and Close
// does not wait for the sleepers.
func TestLatencyFSCloseWhileDelayed(t *testing.T) {
	data := make([]byte, 64<<10)
	for i := range data {
		data[i] = byte(i * 31)
	}
	dir := testdir.New(t)
	for _, c := range []struct {
		name string
		fs   vfs.FS
		path string
	}{{"mem", vfs.NewMem(), "/f"}, {"os", vfs.Default, vfs.Default.PathJoin(dir, "f")}} {
		t.Run(c.name, func(t *testing.T) {
			writeFixture(t, c.fs, c.path, data)
			const lat = 200 * time.Millisecond // long, so a loaded machine cannot make Close look slow
			lfs := New(c.fs, Options{ReadLatency: lat})
			f, err := lfs.Open(c.path)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for i := range 16 {
				wg.Go(func() {
					off := int64(i) * 4096
					buf := make([]byte, 4096)
					n, err := f.ReadAt(buf, off)
					switch {
					case err == nil && n == len(buf):
						if !bytes.Equal(buf, data[off:off+4096]) {
							t.Errorf("read %d returned wrong bytes", i)
						}
					case errors.Is(err, os.ErrClosed):
					default:
						t.Errorf("read %d: %d, %v", i, n, err)
					}
				})
			}
			time.Sleep(5 * time.Millisecond)
			start := time.Now()
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > lat/2 {
				t.Errorf("Close took %v while reads slept", d)
			}
			wg.Wait()
			buf := make([]byte, 10)
			if _, err := f.ReadAt(buf, 0); !errors.Is(err, os.ErrClosed) {
				t.Fatalf("read after Close: %v, want os.ErrClosed", err)
			}
		})
	}
}
