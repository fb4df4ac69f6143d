package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/benchdata"
	"github.com/shaledb/shale/internal/monotime"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/latencyfs"
)

// The file-layer benchmarks of issue 3. Each runs several modes side by
// side in one run and prints one line per mode plus a line of ratios; see
// docs/io-benchmarks.md for what they measure and how to run them.

// randReadBlock is the size of randread_batch's reads.
const randReadBlock = 4096

// formatIOMetrics renders the IO counters of Metrics() on one line.
func formatIOMetrics(m *shale.IOMetrics) string {
	return fmt.Sprintf("IO: reader=%s reads=%d bytes_read=%d io_uring_enters=%d sqes=%d readahead_issued=%d readahead_used=%d direct_reads=%d",
		m.AsyncReader, m.ReadsSubmitted, m.BytesRead, m.IOUringEnters, m.IOUringSQEs,
		m.ReadaheadBytesIssued, m.ReadaheadBytesUsed, m.DirectReads)
}

// fixturePath names a file or directory in --db/bench-io, creating the
// directory.
func (r *benchRunner) fixturePath(name string) (string, error) {
	dir := vfs.Default.PathJoin(r.dir, benchIODir)
	if err := vfs.Default.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return vfs.Default.PathJoin(dir, name), nil
}

// randReadFile returns randread_batch's file of --file_size bytes, writing
// it unless a valid one is present. Every 4 KiB block starts with its block
// number (8 bytes, little-endian), so each read can be checked.
func (r *benchRunner) randReadFile() (string, error) {
	size := r.cfg.fileSize / randReadBlock * randReadBlock
	path, err := r.fixturePath(fmt.Sprintf("randread-%d.dat", size))
	if err != nil {
		return "", err
	}
	if randReadFileValid(path, size) {
		fmt.Fprintf(r.progress, "randread_batch : reusing %s\n", path)
		return path, nil
	}
	fmt.Fprintf(r.progress, "randread_batch : writing %d MiB to %s\n", size>>20, path)
	f, err := vfs.Default.Create(path)
	if err != nil {
		return "", err
	}
	chunk := benchdata.CompressibleBytes(1<<20, 1) // incompressible filler
	for off := int64(0); off < size; {
		n := min(int64(len(chunk)), size-off)
		for b := int64(0); b < n; b += randReadBlock {
			binary.LittleEndian.PutUint64(chunk[b:], uint64((off+b)/randReadBlock))
		}
		if _, err := f.Write(chunk[:n]); err != nil {
			f.Close()
			return "", err
		}
		off += n
	}
	if err := f.SyncData(); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

// randReadFileValid checks the size and the first and last block headers
// of an existing file.
func randReadFileValid(path string, size int64) bool {
	f, err := vfs.Default.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if sz, err := f.Size(); err != nil || sz != size {
		return false
	}
	var hdr [8]byte
	for _, blk := range []int64{0, size/randReadBlock - 1} {
		if _, err := f.ReadAt(hdr[:], blk*randReadBlock); err != nil || binary.LittleEndian.Uint64(hdr[:]) != uint64(blk) {
			return false
		}
	}
	return true
}

// randReadMode is one way randread_batch issues a batch.
type randReadMode struct {
	name   string
	reader vfs.AsyncReader // nil: a sequential ReadAt loop
}

// randReadResult is what one mode measured.
type randReadResult struct {
	name, kind     string
	reads, batches int64
	elapsed        time.Duration
	hist           *hdrhistogram.Histogram // ns per batch
	syscallsPerOp  float64
}

func (m *randReadResult) readsPerSec() float64 {
	if m.elapsed <= 0 {
		return 0
	}
	return float64(m.reads) / m.elapsed.Seconds()
}

// benchRandReadBatch reads random 4 KiB blocks, --multiread_batch_size per
// batch, in three modes: a sequential pread loop, concurrent preads (the
// portable async reader) and one native batch (io_uring where available).
func benchRandReadBatch(r *benchRunner, t *benchThread) error {
	c := &r.cfg
	path, err := r.randReadFile()
	if err != nil {
		return err
	}
	// On a latency FS the simulated device should be the only cost, so by
	// default its inner file is read through a warm page cache; on the
	// local disk, by default, with direct IO. --use_direct_reads decides
	// when given (and then the cache is evicted before each mode).
	_, onLatencyFS := r.fs.(*latencyfs.FS)
	direct := !onLatencyFS
	if c.useDirectReadsSet {
		direct = c.useDirectReads
	}
	warm := onLatencyFS && !direct
	how := "buffered, cache evicted before each mode"
	if warm {
		how = "buffered, cache warm"
	}
	var f vfs.File
	if direct {
		f, err = r.fs.Open(path, vfs.DirectIO, vfs.RandomAccess)
		if errors.Is(err, vfs.ErrDirectIOUnsupported) {
			fmt.Fprintf(r.out, "randread_batch : direct IO unavailable (%v); reading through the page cache\n", err)
			direct = false
		} else {
			how = "O_DIRECT"
		}
	}
	if !direct {
		f, err = r.fs.Open(path, vfs.RandomAccess)
	}
	if err != nil {
		return err
	}
	defer f.Close()

	bs := c.multireadBatchSize
	blocks := c.fileSize / randReadBlock
	total := max(c.reads, int64(bs))
	env := "local"
	if onLatencyFS {
		env = "latency FS"
	}
	fmt.Fprintf(r.out, "randread_batch : %d MiB file, %s, %s, %d reads of 4 KiB in batches of %d\n",
		blocks*randReadBlock>>20, how, env, total/int64(bs)*int64(bs), bs)

	align := max(vfs.Alignment(f), randReadBlock)
	buf := vfs.AlignedBuffer(bs*randReadBlock, align)
	reqs := make([]vfs.ReadRequest, bs)

	portable := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true, QueueDepth: bs})
	defer portable.Close()
	native := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: c.disableIOUring, SQPoll: c.ioUringSQPoll, QueueDepth: bs,
		Logf: func(format string, args ...any) { fmt.Fprintf(r.progress, format+"\n", args...) }})
	if w, ok := r.fs.(vfs.AsyncReaderWrapper); ok {
		// On the latency FS: the batch mode reads the files beneath
		// natively, each read still completing at its simulated
		// deadline. The concurrent mode stays concurrent preads, through
		// the latency files' ReadAt.
		native = w.WrapAsyncReader(native)
	}
	defer native.Close()
	modes := []randReadMode{{name: "sequential"}, {name: "concurrent", reader: portable}, {name: "batch", reader: native}}

	var results []randReadResult
	if warm {
		if err := warmCache(path); err != nil {
			return err
		}
	}
	for _, m := range modes {
		if !warm {
			if err := vfs.DropCache(path); err != nil {
				return err
			}
		}
		// Every mode reads the same blocks.
		rng := rand.New(rand.NewPCG(uint64(c.seed), 0xb10c))
		res := randReadResult{name: m.name, kind: "pread", hist: newLatencyHistogram(), syscallsPerOp: 1}
		var before vfs.AsyncStats
		if m.reader != nil {
			res.kind = m.reader.Kind()
			before = m.reader.Stats()
		}
		deadline := time.Now().Add(c.duration)
		more := func() bool {
			if c.duration > 0 {
				return time.Now().Before(deadline)
			}
			return res.reads+int64(bs) <= total
		}
		start := monotime.Now()
		for more() {
			for i := range reqs {
				off := rng.Int64N(blocks) * randReadBlock
				reqs[i] = vfs.ReadRequest{File: f, Off: off, Buf: buf[i*randReadBlock : (i+1)*randReadBlock]}
			}
			bstart := monotime.Now()
			if m.reader == nil {
				for i := range reqs {
					q := &reqs[i]
					q.N, q.Err = q.File.ReadAt(q.Buf, q.Off)
				}
			} else {
				m.reader.Submit(reqs).Wait() // errors are checked per request below
			}
			_ = res.hist.RecordValue(max(monotime.Since(bstart).Nanoseconds(), 1))
			for i := range reqs {
				if err := checkRandRead(&reqs[i]); err != nil {
					return fmt.Errorf("%s mode: %w", m.name, err)
				}
			}
			res.reads += int64(bs)
			res.batches++
			t.finished(int64(bs), int64(bs*randReadBlock))
		}
		res.elapsed = monotime.Since(start)
		if m.reader != nil && res.kind == "io_uring" {
			after := m.reader.Stats()
			if sqes := after.SQEs - before.SQEs; sqes > 0 {
				res.syscallsPerOp = float64(after.Enters-before.Enters) / float64(sqes)
			}
		}
		results = append(results, res)
	}
	base := results[0].readsPerSec()
	for i := range results {
		m := &results[i]
		ratio := 0.0
		if base > 0 {
			ratio = m.readsPerSec() / base
		}
		fmt.Fprintf(r.out, "randread_batch : %-10s reader=%-8s %10.0f reads/s  us/batch p50 %9.1f p99 %9.1f  syscalls/read %.3f  %6.2fx sequential\n",
			m.name, m.kind, m.readsPerSec(), float64(m.hist.ValueAtQuantile(50))/1e3, float64(m.hist.ValueAtQuantile(99))/1e3,
			m.syscallsPerOp, ratio)
	}
	if l, ok := r.fs.(*latencyfs.FS); ok {
		s := l.Stats()
		fmt.Fprintf(r.out, "randread_batch : latency FS delayed %d reads, %v simulated in all\n", s.ReadsDelayed, s.TotalDelay)
	}
	return nil
}

// warmCache reads the whole file once, through the OS file system, so that
// later buffered reads of it hit the page cache.
func warmCache(path string) error {
	f, err := vfs.Default.Open(path, vfs.SequentialAccess)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for off := int64(0); ; off += int64(len(buf)) {
		n, err := f.ReadAt(buf, off)
		if err == io.EOF || (err == nil && n < len(buf)) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// checkRandRead checks a read returned the whole block it asked for.
func checkRandRead(q *vfs.ReadRequest) error {
	if q.Err != nil && !(q.Err == io.EOF && q.N == len(q.Buf)) {
		return fmt.Errorf("read of 4 KiB at %d: %w", q.Off, q.Err)
	}
	if q.N != len(q.Buf) {
		return fmt.Errorf("read of 4 KiB at %d returned %d bytes", q.Off, q.N)
	}
	if got := binary.LittleEndian.Uint64(q.Buf); got != uint64(q.Off/randReadBlock) {
		return fmt.Errorf("read at %d returned block %d, want %d (delete the file in %s to rebuild it)", q.Off, got, q.Off/randReadBlock, benchIODir)
	}
	return nil
}

// scanMode is one configuration scan_direct scans under.
type scanMode struct {
	name          string
	direct        bool
	maxAuto       int64 // Options.MaxAutoReadaheadSize; 0 = default
	readaheadSize int64 // ReadOptions.ReadaheadSize
}

// scanResult is what one scan measured.
type scanResult struct {
	mode    scanMode
	skipped error
	entries int64
	elapsed time.Duration
	io      shale.IOMetrics
}

// benchScanDirect scans a database of at least --scan_db_size bytes with
// direct reads and readahead off, with direct reads and a 32-block
// readahead, and buffered after evicting its tables from the page cache.
func benchScanDirect(r *benchRunner, t *benchThread) error {
	c := &r.cfg
	dir, err := r.fixturePath("scan-db")
	if err != nil {
		return err
	}
	sstBytes, err := r.ensureScanDB(dir)
	if err != nil {
		return err
	}
	modes := []scanMode{
		{name: "direct-readahead-off", direct: true, maxAuto: -1},
		{name: "direct-readahead-32", direct: true, readaheadSize: 32 * int64(c.blockSize)},
		{name: "buffered-cold", direct: false},
	}
	comp := "none"
	if c.compressionSet {
		comp = c.compression
	}
	fmt.Fprintf(r.out, "scan_direct : %d MiB of tables in %s, block size %d, compression %s\n", sstBytes>>20, dir, c.blockSize, comp)
	results := make([]scanResult, len(modes))
	for i, m := range modes {
		res, err := r.scanOnce(dir, m, t)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		results[i] = res
		if res.skipped != nil {
			fmt.Fprintf(r.out, "scan_direct : %-20s : skipped: %v\n", m.name, res.skipped)
			continue
		}
		secs := res.elapsed.Seconds()
		note := ""
		if m.direct && res.io.DirectReads == 0 {
			// Honest output while the read path does not yet count (or do)
			// direct reads.
			note = " (no direct reads counted)"
		}
		fmt.Fprintf(r.out, "scan_direct : %-20s : %8.3f s %8.1f MB/s %d entries %s%s\n",
			m.name, secs, float64(sstBytes)/(1<<20)/secs, res.entries, formatIOMetrics(&res.io), note)
	}
	var entries int64 = -1
	for _, res := range results {
		if res.skipped != nil {
			continue
		}
		if entries >= 0 && res.entries != entries {
			return fmt.Errorf("modes disagree: one scan saw %d entries, another %d", entries, res.entries)
		}
		entries = res.entries
	}
	ratio := func(a, b scanResult) string {
		if a.skipped != nil || b.skipped != nil || b.elapsed <= 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2fx", a.elapsed.Seconds()/b.elapsed.Seconds())
	}
	fmt.Fprintf(r.out, "scan_direct : readahead speedup (off time / on time) %s, direct-readahead-32 time / buffered-cold time %s\n",
		ratio(results[0], results[1]), ratio(results[1], results[2]))
	return nil
}

// scanDBOptions are the options scan_direct's database is built and scanned
// with; compression is off unless --compression_type was given, so the
// bytes read are the bytes stored.
func (r *benchRunner) scanDBOptions() (*shale.Options, error) {
	o, err := r.options()
	if err != nil {
		return nil, err
	}
	if !r.cfg.compressionSet {
		o.Compression = shale.NoCompression
	}
	o.CreateIfMissing = true
	return o, nil
}

// ensureScanDB builds scan_direct's database in dir unless one of at least
// --scan_db_size bytes of tables is there, and returns its table bytes.
func (r *benchRunner) ensureScanDB(dir string) (int64, error) {
	o, err := r.scanDBOptions()
	if err != nil {
		return 0, err
	}
	o.FS = vfs.Default // building is not what is measured
	tableBytes := func(db *shale.DB) int64 {
		var n int64
		for _, l := range db.Metrics().Levels {
			n += int64(l.Size)
		}
		return n
	}
	if _, err := vfs.Default.Stat(vfs.Default.PathJoin(dir, "CURRENT")); err == nil {
		db, err := shale.Open(dir, o)
		if err != nil {
			return 0, fmt.Errorf("opening %s: %w", dir, err)
		}
		warnRecoveryLosses(r.progress, db)
		n := tableBytes(db)
		if err := db.Close(); err != nil {
			return 0, err
		}
		if n >= r.cfg.scanDBSize {
			fmt.Fprintf(r.progress, "scan_direct : reusing %s (%d MiB of tables)\n", dir, n>>20)
			return n, nil
		}
	}
	if err := vfs.Default.RemoveAll(dir); err != nil {
		return 0, err
	}
	entry := int64(r.cfg.keySize + r.cfg.valueSize)
	num := (r.cfg.scanDBSize + entry - 1) / entry
	if len(fmt.Sprint(num-1)) > r.cfg.keySize {
		return 0, fmt.Errorf("--key_size %d is too small for the %d keys of --scan_db_size %d", r.cfg.keySize, num, r.cfg.scanDBSize)
	}
	fmt.Fprintf(r.progress, "scan_direct : writing %d entries (%d MiB) to %s\n", num, num*entry>>20, dir)
	db, err := shale.Open(dir, o)
	if err != nil {
		return 0, fmt.Errorf("opening %s: %w", dir, err)
	}
	warnRecoveryLosses(r.progress, db)
	t := r.newThread(0, 0)
	b := db.NewBatch()
	wo := &shale.WriteOptions{DisableWAL: true}
	for k := int64(0); k < num; {
		b.Reset()
		for j := 0; j < 1000 && k < num; j, k = j+1, k+1 {
			b.Put(t.makeKey(k), t.value())
		}
		if err := db.Write(b, wo); err != nil {
			db.Close()
			return 0, err
		}
		r.done.Add(int64(b.Len())) // progress lines show the build
	}
	if err := db.Flush(); err == nil {
		err = db.CompactRange(nil, nil)
	}
	n := tableBytes(db)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// scanOnce opens the database in dir for mode m, evicts its tables from
// the page cache and scans it from first to last key.
func (r *benchRunner) scanOnce(dir string, m scanMode, t *benchThread) (res scanResult, err error) {
	res.mode = m
	o, err := r.scanDBOptions()
	if err != nil {
		return res, err
	}
	o.CreateIfMissing = false
	o.UseDirectReads = m.direct
	o.MaxAutoReadaheadSize = m.maxAuto
	names, err := vfs.Default.List(dir)
	if err != nil {
		return res, err
	}
	for _, name := range names {
		if strings.HasSuffix(name, ".sst") {
			if err := vfs.DropCache(vfs.Default.PathJoin(dir, name)); err != nil {
				return res, err
			}
		}
	}
	db, err := shale.Open(dir, o)
	if errors.Is(err, vfs.ErrDirectIOUnsupported) {
		res.skipped = err
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("opening %s: %w", dir, err)
	}
	warnRecoveryLosses(r.progress, db)
	defer func() {
		if cerr := db.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	start := monotime.Now()
	it := db.NewIterator(&shale.ReadOptions{ReadaheadSize: m.readaheadSize})
	for ok := it.First(); ok; ok = it.Next() {
		res.entries++
		t.finished(1, int64(len(it.Key())+len(it.Value())))
	}
	err = it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	res.elapsed = monotime.Since(start)
	if errors.Is(err, vfs.ErrDirectIOUnsupported) {
		res.skipped, err = err, nil
		return res, nil
	}
	res.io = db.Metrics().IO
	return res, err
}
