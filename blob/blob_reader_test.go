package blob

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

// TestGetCachesValues: a Get with a cache reads the file once per value;
// later Gets, and a Reader opened again under the same cache id, are cache
// hits that read nothing. GetCounted without fillCache leaves the cache
// alone.
func TestGetCachesValues(t *testing.T) {
	rng := newRand(t)
	recs := randomRecords(rng, 100)
	data, xs, _ := writeBlob(t, WriterOptions{Compression: SnappyCompression}, recs)
	c := cache.New(64 << 20)
	var stats ReadStats
	r, err := openBytes(data, ReaderOptions{Cache: c, Stats: &stats})
	if err != nil {
		t.Fatal(err)
	}
	opened := stats.FileReads.Load()
	var call ReadStats
	for i, x := range xs {
		if i%2 == 0 {
			continue
		}
		if v, err := r.GetCounted(x, recs[i].key, false, &call); err != nil || !bytes.Equal(v, recs[i].value) {
			t.Fatalf("GetCounted %d without fill: %v", i, err)
		}
	}
	if call.FileReads.Load() != 50 || call.CacheHits.Load() != 0 || call.BlockReads.Load() != 50 {
		t.Fatalf("call counters: %d reads, %d hits, %d blocks; want 50, 0, 50", call.FileReads.Load(), call.CacheHits.Load(), call.BlockReads.Load())
	}
	for pass := 0; pass < 2; pass++ {
		for i, x := range xs {
			v, err := r.Get(x, recs[i].key)
			if err != nil || !bytes.Equal(v, recs[i].value) {
				t.Fatalf("pass %d: Get %d: %v", pass, i, err)
			}
		}
	}
	if got := stats.FileReads.Load() - opened; got != 150 {
		t.Fatalf("%d file reads for 50 unfilled Gets and 200 cached ones, want 150", got)
	}
	if stats.CacheHits.Load() != 100 {
		t.Fatalf("%d cache hits, want 100", stats.CacheHits.Load())
	}
	id := r.CacheID()
	// Values are cached under (cache id, index offset), key first.
	for i, x := range xs {
		b, ok := c.Get(id, x.Offset)
		if !ok || !bytes.HasSuffix(b, recs[i].value) || !bytes.Contains(b[:len(b)-len(recs[i].value)], recs[i].key) {
			t.Fatalf("value %d not cached under (%d, %d)", i, id, x.Offset)
		}
	}
	r.Close()
	var stats2 ReadStats
	r2, err := openBytes(data, ReaderOptions{Cache: c, CacheID: id, Stats: &stats2})
	if err != nil {
		t.Fatal(err)
	}
	opened = stats2.FileReads.Load()
	for i, x := range xs {
		if v, err := r2.Get(x, recs[i].key); err != nil || !bytes.Equal(v, recs[i].value) {
			t.Fatalf("reopened: Get %d: %v", i, err)
		}
	}
	if stats2.FileReads.Load() != opened || stats2.CacheHits.Load() != 100 {
		t.Fatalf("reopened under the same id: %d reads, %d hits", stats2.FileReads.Load()-opened, stats2.CacheHits.Load())
	}
	// A new id shares nothing.
	r3, err := openBytes(data, ReaderOptions{Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(r3.CacheID(), xs[0].Offset); ok {
		t.Fatal("a new cache id sees another reader's values")
	}
}

// TestGetVerifiesIndexAndKey: an index that does not lead to the record of
// the key asked for is corruption (or, for another file's index, an invalid
// argument), whether the record is read or cached.
func TestGetVerifiesIndexAndKey(t *testing.T) {
	recs := []record{{[]byte("apple"), bytes.Repeat([]byte("a"), 3000)}, {[]byte("banana"), []byte("yellow")}, {[]byte("cherry"), []byte("red")}}
	data, xs, _ := writeBlob(t, WriterOptions{FileNum: 3, Compression: SnappyCompression}, recs)
	for _, withCache := range []bool{false, true} {
		o := ReaderOptions{FileNum: 3}
		if withCache {
			o.Cache = cache.New(1 << 20)
		}
		r, err := openBytes(data, o)
		if err != nil {
			t.Fatal(err)
		}
		if withCache {
			for i, x := range xs {
				if _, err := r.Get(x, recs[i].key); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := r.Get(xs[1], []byte("bananas")); err == nil {
			t.Fatal("Get with another key succeeded")
		} else {
			isCorruption(t, "another key", err)
		}
		if _, err := r.Get(xs[1], nil); err == nil {
			t.Fatal("Get with an empty key succeeded")
		}
		other := xs[1]
		other.FileNum = 4
		if _, err := r.Get(other, recs[1].key); !errors.Is(err, base.ErrInvalidArgument) {
			t.Fatalf("index of file 4: %v, want invalid argument", err)
		}
		other = xs[1]
		other.Compression = DefaultCompression
		if _, err := r.Get(other, recs[1].key); !errors.Is(err, base.ErrInvalidArgument) {
			t.Fatalf("index without a stored compression: %v, want invalid argument", err)
		}
		bad := map[string]Index{}
		x := xs[0]
		x.Compression = NoCompression
		if xs[0].Compression == NoCompression {
			x.Compression = ZstdCompression
		}
		bad["compression"] = x
		x = xs[1]
		x.Size++
		bad["size+1"] = x
		x = xs[1]
		x.Size--
		bad["size-1"] = x
		x = xs[1]
		x.Offset++
		bad["offset+1"] = x
		x = xs[1]
		x.Offset = 2
		bad["offset in header"] = x
		x = xs[2]
		x.Size = uint64(len(data))
		bad["past the footer"] = x
		x = xs[2]
		x.Offset = uint64(len(data)) - FooterLen
		x.Size = 0
		bad["the footer"] = x
		for name, x := range bad {
			key := recs[1].key
			if x.Offset == xs[0].Offset {
				key = recs[0].key
			}
			v, err := r.Get(x, key)
			if err == nil {
				t.Fatalf("cache %v, %s: Get returned %d bytes", withCache, name, len(v))
			}
			isCorruption(t, name, err)
		}
	}
}

// TestDirectIOReads reads through a fake direct-IO file that fails any
// unaligned read, with 512 and 4096 byte alignment: Get (with and without
// a cache), the iterator with each readahead mode, and GetBatch.
func TestDirectIOReads(t *testing.T) {
	useAlignedFiles(t)
	rng := newRand(t)
	async := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
	defer async.Close()
	recs := randomRecords(rng, 200)
	data, xs, _ := writeBlob(t, WriterOptions{Compression: ZstdCompression}, recs)
	for _, align := range []int{512, 4096} {
		for _, withCache := range []bool{false, true} {
			f := &alignedFile{bytesFile: bytesFile{data}, align: align}
			var stats ReadStats
			o := ReaderOptions{Stats: &stats, AsyncReader: async}
			if withCache {
				o.Cache = cache.New(8 << 20)
			}
			r, err := NewReader(f, o)
			if err != nil {
				t.Fatal(err)
			}
			for i, x := range xs {
				v, err := r.Get(x, recs[i].key)
				if err != nil || !bytes.Equal(v, recs[i].value) {
					t.Fatalf("align %d: Get %d: %v", align, i, err)
				}
			}
			for _, ra := range []int64{-1, 0, 64 << 10} {
				for _, asyncRA := range []bool{false, true} {
					got, _, err := iterAll(r, IterOptions{ReadaheadSize: ra, Async: asyncRA})
					if err != nil {
						t.Fatalf("align %d readahead %d: %v", align, ra, err)
					}
					checkRecords(t, got, recs)
				}
			}
			b := NewGetBatch(NewReadGroup(async))
			for i, x := range xs {
				b.Add(r, x, recs[i].key, true)
			}
			b.Submit()
			for i := range xs {
				if v, err := b.Result(i); err != nil || !bytes.Equal(v, recs[i].value) {
					t.Fatalf("align %d: batch %d: %v", align, i, err)
				}
			}
			if stats.DirectReads.Load() == 0 || stats.DirectReads.Load() != stats.FileReads.Load() {
				t.Fatalf("align %d: %d direct reads of %d", align, stats.DirectReads.Load(), stats.FileReads.Load())
			}
			r.Close()
		}
	}
}

// TestDirectIOFiles writes and reads blob files opened with vfs.DirectIO:
// in a MemFS (which reports an alignment of 512) and, where the OS allows
// it, on disk.
func TestDirectIOFiles(t *testing.T) {
	rng := newRand(t)
	recs := randomRecords(rng, 300)
	check := func(fs vfs.FS, path string) {
		t.Helper()
		f, err := fs.Create(path, vfs.DirectIO)
		if err != nil {
			t.Skipf("no direct IO here: %v", err)
		}
		w := NewWriter(f, WriterOptions{Compression: SnappyCompression, TargetFileSize: 1 << 20, BytesPerSync: 256 << 10})
		xs := make([]Index, len(recs))
		for i, rc := range recs {
			if xs[i], err = w.Add(rc.key, rc.value); err != nil {
				t.Fatal(err)
			}
		}
		m, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		rf, err := fs.Open(path, vfs.DirectIO)
		if err != nil {
			t.Fatal(err)
		}
		if sz, err := rf.Size(); err != nil || sz != int64(m.Size) {
			t.Fatalf("direct file size %d, %v; metadata says %d", sz, err, m.Size)
		}
		var stats ReadStats
		r, err := NewReader(rf, ReaderOptions{FileName: path, Stats: &stats})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for i, x := range xs {
			if v, err := r.Get(x, recs[i].key); err != nil || !bytes.Equal(v, recs[i].value) {
				t.Fatalf("%s: Get %d: %v", path, i, err)
			}
		}
		got, _, err := iterAll(r, IterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkRecords(t, got, recs)
		if err := r.VerifyFileChecksum(); err != nil {
			t.Fatal(err)
		}
		if stats.DirectReads.Load() == 0 {
			t.Fatalf("%s: no read counted as direct", path)
		}
	}
	check(vfs.NewMem(), "/d.blob")
	check(vfs.Default, testdir.New(t)+"/d.blob")
}

// TestGetBatch resolves random sets of indexes of two files, some values
// cached, through the async reader (io_uring where the kernel has it, and
// the portable reader), synchronously without a group, and through a group
// another user adds to after Submit (whose dropped results the batch reads
// again). Every result equals Get's.
func TestGetBatch(t *testing.T) {
	rng := newRand(t)
	readers := map[string]vfs.AsyncReader{
		"default":  vfs.NewAsyncReader(vfs.AsyncOptions{}),
		"portable": vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true}),
	}
	for _, ar := range readers {
		defer ar.Close()
	}
	type file struct {
		r    *Reader
		recs []record
		xs   []Index
	}
	var files []file
	var stats ReadStats
	c := cache.New(32 << 20)
	for n := 1; n <= 2; n++ {
		recs := randomRecords(rng, 150)
		data, xs, _ := writeBlob(t, WriterOptions{FileNum: base.FileNum(n), Compression: SnappyCompression}, recs)
		r, err := openBytes(data, ReaderOptions{FileNum: base.FileNum(n), Cache: c, Stats: &stats})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		files = append(files, file{r, recs, xs})
	}
	type want struct {
		f, i int
	}
	run := func(name string, b *GetBatch, interfere *ReadGroup) {
		var wants []want
		for k := 0; k < 100; k++ {
			f := rng.IntN(2)
			i := rng.IntN(len(files[f].xs))
			fl := files[f]
			if id := b.Add(fl.r, fl.xs[i], fl.recs[i].key, rng.IntN(3) == 0); id != len(wants) {
				t.Fatalf("%s: Add returned id %d, want %d", name, id, len(wants))
			}
			wants = append(wants, want{f, i})
		}
		// A bad key fails only its own value.
		bad := b.Add(files[0].r, files[0].xs[0], []byte("not the key"), false)
		outside := files[0].xs[0]
		outside.Offset = 1
		badIndex := b.Add(files[0].r, outside, files[0].recs[0].key, false)
		b.Submit()
		var other block.PendingRead
		if interfere != nil {
			// Another user of the group adds a read after Submit: the
			// group drains the batch and drops its results.
			files[1].r.bf.SubmitRead(&other, files[1].r.bf.Source(), recordSpan(files[1].xs[0]), interfere)
			defer func() {
				if _, err := files[1].r.bf.WaitRead(&other, files[1].r.bf.Source()); err != nil {
					t.Error(err)
				}
				other.Release()
			}()
		}
		for _, k := range rng.Perm(len(wants)) {
			w := wants[k]
			fl := files[w.f]
			v, err := b.Result(k)
			if err != nil || !bytes.Equal(v, fl.recs[w.i].value) {
				t.Fatalf("%s: result %d (file %d record %d): %v", name, k, w.f+1, w.i, err)
			}
		}
		if _, err := b.Result(bad); err == nil {
			t.Fatalf("%s: a bad key was resolved", name)
		} else {
			isCorruption(t, name, err)
		}
		if _, err := b.Result(badIndex); err == nil {
			t.Fatalf("%s: an index into the header was resolved", name)
		} else {
			isCorruption(t, name, err)
		}
		if b.Len() != len(wants)+2 {
			t.Fatalf("%s: Len %d", name, b.Len())
		}
		b.Reset()
		if b.Len() != 0 {
			t.Fatalf("%s: Len %d after Reset", name, b.Len())
		}
	}
	for name, ar := range readers {
		asyncBefore := stats.AsyncReads.Load()
		b := NewGetBatch(NewReadGroup(ar))
		for round := 0; round < 5; round++ {
			run(name, b, nil)
		}
		if stats.AsyncReads.Load() == asyncBefore {
			t.Fatalf("%s: no read went through the async reader", name)
		}
		g := NewReadGroup(ar)
		run(name+" shared group", NewGetBatch(g), g)
		g.Close()
		// Reset before any Result waits for the reads in flight.
		c.EvictID(files[0].r.CacheID())
		before := stats.AsyncReads.Load()
		for i := 0; i < 10; i++ {
			b.Add(files[0].r, files[0].xs[i], files[0].recs[i].key, false)
		}
		b.Submit()
		b.Reset()
		if stats.AsyncReads.Load() != before+10 {
			t.Fatalf("%s: %d reads submitted, want 10", name, stats.AsyncReads.Load()-before)
		}
	}
	before := stats.AsyncReads.Load()
	run("synchronous", NewGetBatch(nil), nil)
	if stats.AsyncReads.Load() != before {
		t.Fatal("a batch without a group read asynchronously")
	}
}

// TestIteratorReadahead scans a file with readahead off, automatic and
// explicit, with and without the async double buffer: the records are the
// same, and readahead turns one read per record into a few large ones.
func TestIteratorReadahead(t *testing.T) {
	rng := newRand(t)
	async := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
	defer async.Close()
	recs := make([]record, 2000)
	for i := range recs {
		recs[i] = record{[]byte{byte(i), byte(i >> 8)}, bytes.Repeat([]byte{byte(rng.IntN(256))}, 100+rng.IntN(400))}
	}
	data, xs, _ := writeBlob(t, WriterOptions{FileNum: 9}, recs)
	type mode struct {
		name  string
		o     IterOptions
		ro    ReaderOptions
		reads func(n uint64) bool
	}
	modes := []mode{
		// One read per record, and one for the first record's length.
		{"off", IterOptions{ReadaheadSize: -1}, ReaderOptions{}, func(n uint64) bool { return n == uint64(len(recs))+1 }},
		{"auto off", IterOptions{}, ReaderOptions{MaxAutoReadaheadSize: -1}, func(n uint64) bool { return n == uint64(len(recs))+1 }},
		{"auto", IterOptions{}, ReaderOptions{}, func(n uint64) bool { return n < 20 }},
		{"explicit", IterOptions{ReadaheadSize: 256 << 10}, ReaderOptions{}, func(n uint64) bool { return n < 10 }},
		{"async", IterOptions{Async: true}, ReaderOptions{AsyncReader: async}, func(n uint64) bool { return n < 30 }},
		{"async explicit", IterOptions{Async: true, ReadaheadSize: 64 << 10}, ReaderOptions{AsyncReader: async}, func(n uint64) bool { return n < 40 }},
	}
	for _, m := range modes {
		var stats, call ReadStats
		m.ro.Stats = &stats
		m.ro.FileNum = 9
		r, err := openBytes(data, m.ro)
		if err != nil {
			t.Fatal(err)
		}
		opened := stats.FileReads.Load()
		m.o.Stats = &call
		got, gotXs, err := iterAll(r, m.o)
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		checkRecords(t, got, recs)
		for i := range xs {
			if gotXs[i] != xs[i] {
				t.Fatalf("%s: index %d is %s, writer said %s", m.name, i, gotXs[i], xs[i])
			}
		}
		reads := stats.FileReads.Load() - opened
		if !m.reads(reads) {
			t.Fatalf("%s: %d file reads for %d records", m.name, reads, len(recs))
		}
		if call.FileReads.Load() != reads {
			t.Fatalf("%s: the iterator's own counters saw %d reads of %d", m.name, call.FileReads.Load(), reads)
		}
		if m.name != "off" && m.name != "auto off" && stats.ReadaheadBytesUsed.Load() == 0 {
			t.Fatalf("%s: no readahead bytes used", m.name)
		}
		r.Close()
	}
}

// TestIteratorOtherFile reads through another handle of the file
// (IterOptions.File), as garbage collection reads a direct-IO one.
func TestIteratorOtherFile(t *testing.T) {
	useAlignedFiles(t)
	rng := newRand(t)
	recs := randomRecords(rng, 100)
	data, _, _ := writeBlob(t, WriterOptions{}, recs)
	r, err := openBytes(data, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := &alignedFile{bytesFile: bytesFile{data}, align: 4096}
	var call ReadStats
	got, _, err := iterAll(r, IterOptions{File: f, Stats: &call})
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, recs)
	if f.reads == 0 || call.DirectReads.Load() == 0 {
		t.Fatalf("%d reads of the other handle, %d direct", f.reads, call.DirectReads.Load())
	}
}

// TestHotPathsDoNotAllocate: a cached Get and an Add of an uncompressed
// value allocate nothing.
func TestHotPathsDoNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts")
	}
	recs := []record{{[]byte("key"), bytes.Repeat([]byte("v"), 4000)}}
	data, xs, _ := writeBlob(t, WriterOptions{}, recs)
	r, err := openBytes(data, ReaderOptions{Cache: cache.New(1 << 20)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(xs[0], recs[0].key); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := r.Get(xs[0], recs[0].key); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("a cached Get allocates %.1f times", n)
	}
	w := NewWriter(&discardFile{}, WriterOptions{})
	value := bytes.Repeat([]byte("x"), 8000)
	w.Add(recs[0].key, value)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := w.Add(recs[0].key, value); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("Add allocates %.1f times", n)
	}
}

// TestLargeValues round-trips values larger than the writer's buffer and the
// readahead windows, compressible and not, with every compression.
func TestLargeValues(t *testing.T) {
	rng := newRand(t)
	var recs []record
	for i := 0; i < 6; i++ {
		v := make([]byte, 300<<10+rng.IntN(2<<20))
		if i%2 == 0 {
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
		} else {
			for j := range v {
				v[j] = "abcd"[j/1000%4]
			}
		}
		recs = append(recs, record{[]byte{byte(i)}, v}, record{[]byte("small"), []byte("x")})
	}
	for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
		data, xs, _ := writeBlob(t, WriterOptions{Compression: c}, recs)
		r, err := openBytes(data, ReaderOptions{Cache: cache.New(64 << 20)})
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range xs {
			if v, err := r.Get(x, recs[i].key); err != nil || !bytes.Equal(v, recs[i].value) {
				t.Fatalf("%s: Get %d: %v", c, i, err)
			}
		}
		for _, ra := range []int64{0, 64 << 10} {
			got, _, err := iterAll(r, IterOptions{ReadaheadSize: ra})
			if err != nil {
				t.Fatal(err)
			}
			checkRecords(t, got, recs)
		}
	}
}

// TestConcurrentGets reads one Reader from several goroutines, through a
// small cache that evicts, and by GetBatches of their own.
func TestConcurrentGets(t *testing.T) {
	rng := newRand(t)
	recs := randomRecords(rng, 300)
	data, xs, _ := writeBlob(t, WriterOptions{Compression: SnappyCompression}, recs)
	async := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
	defer async.Close()
	r, err := openBytes(data, ReaderOptions{Cache: cache.New(256 << 10), AsyncReader: async})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		seed := rng.Uint64()
		go func() {
			lr := rand.New(rand.NewPCG(seed, 1))
			b := NewGetBatch(NewReadGroup(async))
			for k := 0; k < 500; k++ {
				i := lr.IntN(len(xs))
				if k%10 == 0 {
					id := b.Add(r, xs[i], recs[i].key, true)
					b.Submit()
					if v, err := b.Result(id); err != nil || !bytes.Equal(v, recs[i].value) {
						errs <- fmt.Errorf("batch %d: %v", i, err)
						return
					}
					b.Reset()
					continue
				}
				if v, err := r.Get(xs[i], recs[i].key); err != nil || !bytes.Equal(v, recs[i].value) {
					errs <- fmt.Errorf("Get %d: %v", i, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
