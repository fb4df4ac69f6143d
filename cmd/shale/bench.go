package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/benchdata"
	"github.com/shaledb/shale/internal/monotime"
	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/latencyfs"
)

// benchConfig holds the bench flags; names and meanings follow db_bench.
type benchConfig struct {
	benchmarks      []string
	num             int64 // keys in the key space; ops per thread of the write benchmarks
	reads           int64 // ops per thread of the read benchmarks; < 0 means num
	keySize         int
	valueSize       int
	threads         int
	batchSize       int
	seekNexts       int
	db              string // "" = a fresh temporary directory, removed afterwards
	useExistingDB   bool
	compression     string
	bloomBits       int // <= 0 disables the filter
	cacheSize       int64
	writeBufferSize int
	sync            bool
	disableAutoComp bool
	histogram       bool
	seed            int64 // 0 = derived from the clock (and printed)
	duration        time.Duration
	progressEvery   time.Duration // interval of "... N ops" lines; 0 = none
	blockSize       int

	// Reports and progress (issue 17, items 2 and 3; bench_report.go,
	// progress.go).
	report string // --report: write the HTML report here ("" = none)
	// progressOut is where the one-line progress display is drawn (stderr
	// when it is a terminal and --progress is on); nil = none.
	progressOut io.Writer

	// File-layer flags (issue 3); see bench_io.go for the benchmarks that
	// exercise them.
	envReadLatency     time.Duration // --env_read_latency_us: wrap the FS in a latencyfs.FS
	envReadJitter      time.Duration // --env_read_jitter_us
	envReadBandwidthMB int64         // --env_read_bandwidth_mb, MiB/s; 0 = unlimited
	useDirectReads     bool
	// useDirectReadsSet records that --use_direct_reads was given:
	// randread_batch reads with direct IO unless it was set to false.
	useDirectReadsSet    bool
	useDirectIOForFlush  bool
	readaheadSize        int64 // ReadOptions.ReadaheadSize
	maxAutoReadaheadSize int64 // db_bench meaning: 0 turns automatic readahead off
	bytesPerSync         int64 // db_bench meaning: 0 is off
	disableIOUring       bool
	ioUringSQPoll        bool
	walBackgroundWrites  bool
	ioStats              bool  // print Metrics().IO after each benchmark
	fileSize             int64 // randread_batch's file
	scanDBSize           int64 // scan_direct's database
	multireadBatchSize   int   // reads per batch of randread_batch
	compressionSet       bool  // --compression_type was given (scan_direct defaults to none)

	// rateLimiterBytesPerSec bounds flush and compaction writes
	// (Options.RateLimiter; db_bench meaning: 0 is no limit).
	rateLimiterBytesPerSec int64

	// The async read path (issue 5); see bench_async.go.
	asyncIO               bool  // ReadOptions.AsyncIO
	optimizeMultiGetForIO bool  // ReadOptions.OptimizeMultiGetForIO
	multireadBatched      bool  // multireadrandom calls MultiGet; false loops Get (db_bench)
	multireadStride       int64 // keys of a multireadrandom batch are start + i*stride; 0 = random
	statistics            bool  // set Options.Statistics and print it after each benchmark
	numLevels             int   // Options.NumLevels
	seekNextsSet          bool  // --seek_nexts was given (asyncio defaults it to 65536)

	// db_bench's most used flags (issue 10); see bench_workloads.go. The
	// Options ones default to RocksDB's defaults, which are shale's.
	targetFileSizeBase             int64
	maxBytesForLevelBase           int64
	maxBytesForLevelMultiplier     float64
	level0FileNumCompactionTrigger int
	level0SlowdownWritesTrigger    int
	level0StopWritesTrigger        int
	maxBackgroundJobs              int
	maxWriteBufferNumber           int
	disableWAL                     bool          // WriteOptions.DisableWAL
	openFiles                      int           // max_open_files: -1 keeps every table open
	cacheIndexAndFilterBlocks      bool          // Options.CacheIndexAndFilterBlocks
	pinL0FilterAndIndexBlocks      bool          // Options.PinL0FilterAndIndexBlocksInCache
	compressionRatio               float64       // values compress to about this fraction
	statsInterval                  time.Duration // --stats_interval_seconds; 0 = none
	useExistingKeys                bool          // key number k is the k-th key of the database
	readWritePercent               int           // readrandomwriterandom's share of reads
	readsSet                       bool          // --reads was given (else it follows --num)

	// The delete scan of issue 12 (bench_deletescan.go).
	deleteWait        time.Duration // --delete_wait: idle time before deletescan's second scan
	valueSizeSet      bool          // --value_size was given (deletescan defaults it to 500)
	deletePersistence time.Duration // Options.DeletePersistenceThreshold

	// Key-value separation (issue 13): db_bench's blob flags, each the
	// Options field of the same RocksDB name.
	enableBlobFiles bool
	// blobWriteSeparation is Options.EnableBlobWriteSeparation (shale's
	// own --enable_blob_write_separation).
	blobWriteSeparation bool
	// mergeOperator is --merge_operator: "" (none), uint64add or
	// stringappend.
	mergeOperator   string
	minBlobSize     int64
	blobFileSize    int64
	blobCompression string
	enableBlobGC    bool
	mmapRead        bool
	mmapWrite       bool
	blobGCAgeCutoff float64
	blobGCForce     float64
	// blobGCMaxRelocation is BlobGarbageCollectionMaxRelocationBytes.
	blobGCMaxRelocation int64
	blobFileStartLevel  int
	blobCacheSize       int64

	// Prefix seeks (issue 15, item 3; bench_prefix.go): db_bench's flags of
	// the same names.
	prefixSize             int     // --prefix_size: Options.PrefixExtractor of this many bytes; 0 = none
	keysPerPrefix          int64   // --keys_per_prefix: keys start with prefix number k mod (num / this); 0 = plain keys
	memtableBloomSizeRatio float64 // --memtable_bloom_size_ratio: Options.MemtablePrefixBloomSizeRatio
	prefixSameAsStart      bool    // --prefix_same_as_start: ReadOptions.PrefixSameAsStart
	totalOrderSeek         bool    // --total_order_seek: ReadOptions.TotalOrderSeek
	wholeKeyFiltering      bool    // --whole_key_filtering: Options.WholeKeyFiltering
	seekMissingPrefix      bool    // --seek_missing_prefix: prefixscan seeks prefixes no key has

	// indexType is db_bench's --index_type (0 binary search, 2 two-level);
	// partitionIndexAndFilters its --partition_index_and_filters (a
	// two-level index and partitioned filters); metadataBlockSize its
	// --metadata_block_size (0: the default).
	indexType                int
	partitionIndexAndFilters bool
	metadataBlockSize        int
}

// defaultBenchConfig returns db_bench's defaults.
func defaultBenchConfig() benchConfig {
	return benchConfig{
		benchmarks:      strings.Split(defaultSuite, ","),
		num:             1000000,
		reads:           -1,
		keySize:         16,
		valueSize:       100,
		threads:         1,
		batchSize:       1,
		compression:     "snappy",
		bloomBits:       10,
		cacheSize:       8 << 20,
		writeBufferSize: 64 << 20,
		progressEvery:   5 * time.Second,
		blockSize:       4096,

		maxAutoReadaheadSize: 256 << 10,
		fileSize:             1 << 30,
		scanDBSize:           1 << 30,
		multireadBatchSize:   64,

		blobFileSize:    256 << 20,
		blobCompression: "none",
		blobGCAgeCutoff: 0.25,
		blobGCForce:     1.0,

		optimizeMultiGetForIO: true,
		numLevels:             7,

		targetFileSizeBase:             64 << 20,
		maxBytesForLevelBase:           256 << 20,
		maxBytesForLevelMultiplier:     10,
		level0FileNumCompactionTrigger: 4,
		level0SlowdownWritesTrigger:    20,
		level0StopWritesTrigger:        36,
		maxBackgroundJobs:              2,
		maxWriteBufferNumber:           2,
		openFiles:                      -1,
		compressionRatio:               0.5,
		readWritePercent:               90,

		deleteWait: 10 * time.Second,

		wholeKeyFiltering: true,
	}
}

// defaultSuite runs when bench is given no --benchmarks.
const defaultSuite = "fillseq,fillrandom,readrandom,seekrandom,readseq"

// benchFn runs one benchmark's work on one thread.
type benchFn func(r *benchRunner, t *benchThread) error

type benchSpec struct {
	fn      benchFn
	freshDB bool // db_bench's fresh_db: the DB is recreated first
	// writer adds one writing thread to the readers (readwhilewriting); its
	// ops are not reported.
	writer bool
	// control benchmarks (flush, compact) run once, on one thread.
	control bool
	// ownOutput benchmarks print their own result lines instead of the
	// db_bench line.
	ownOutput bool
	// op is the operation type --histogram records the ops under.
	op benchOp
	// numDivisor divides --num for the benchmark (db_bench's num_ /= 1000
	// of fillsync and fill100K); valueSize replaces --value_size, and
	// defaultValueSize does unless --value_size was given; sync makes its
	// writes sync (fillsync). See beginBenchmark.
	numDivisor       int64
	valueSize        int
	defaultValueSize int
	sync             bool
	// message, when set, renders db_bench's message of the benchmark in
	// place of "(F of R found)".
	message func(res *benchResult) string
}

var benchSpecs = map[string]benchSpec{
	"fillseq":          {fn: benchFillSeq, freshDB: true, op: opWrite},
	"fillrandom":       {fn: benchFillRandom, freshDB: true, op: opWrite},
	"overwrite":        {fn: benchFillRandom, op: opWrite},
	"readrandom":       {fn: benchReadRandom, op: opRead},
	"readseq":          {fn: benchReadSeq, op: opRead},
	"readreverse":      {fn: benchReadReverse, op: opRead},
	"seekrandom":       {fn: benchSeekRandom, op: opSeek},
	"deleterandom":     {fn: benchDeleteRandom, op: opDelete},
	"readwhilewriting": {fn: benchReadRandom, writer: true, op: opRead},
	"flush":            {fn: benchFlush, control: true},
	"compact":          {fn: benchCompact, control: true},
	"stats":            {control: true},
	// The file-layer benchmarks print their own lines, one per mode.
	"randread_batch": {fn: benchRandReadBatch, control: true, ownOutput: true},
	"scan_direct":    {fn: benchScanDirect, control: true, ownOutput: true},
	// The async read path (issue 5).
	"multireadrandom":      {fn: benchMultiReadRandom, op: opRead},
	"fillseqdeterministic": {fn: benchFillSeqDeterministic, freshDB: true, control: true, op: opWrite},
	"asyncio":              {fn: benchAsyncIO, control: true, ownOutput: true},
	// db_bench's workloads of issue 10 (bench_workloads.go).
	"fillsync":              {fn: benchFillRandom, freshDB: true, op: opWrite, numDivisor: 1000, sync: true},
	"fill100K":              {fn: benchFillRandom, freshDB: true, op: opWrite, numDivisor: 1000, valueSize: fill100KValueSize},
	"readmissing":           {fn: benchReadMissing, op: opRead},
	"readhot":               {fn: benchReadHot, op: opRead},
	"updaterandom":          {fn: benchUpdateRandom, op: opUpdate, message: updateMessage},
	"readrandomwriterandom": {fn: benchReadRandomWriteRandom, op: opRead, message: readWriteMessage},
	// Merges of issue 15 (bench_workloads.go): compare with updaterandom,
	// the read-modify-write loop a merge replaces.
	"mergerandom": {fn: benchMergeRandom, op: opWrite},
	// The delete scan of issue 12 (bench_deletescan.go), one fresh
	// database per variant.
	"deletescan": {fn: benchDeleteScan, freshDB: true, control: true, ownOutput: true, defaultValueSize: deleteScanValueSize},
	// Secondary-attribute range deletes of issue 12 item 5
	// (bench_secondarydelete.go), one fresh database per variant.
	"secondarydelete": {fn: benchSecondaryDelete, freshDB: true, control: true, ownOutput: true},
	// Prefix range reads of issue 15 item 3 (bench_prefix.go).
	"prefixscan": {fn: benchPrefixScan, op: opSeek},
	// External SST ingestion of issue 16 item 3 (bench_ingest.go).
	"fillseqingest": {fn: benchFillSeqIngest, freshDB: true, control: true, op: opWrite},
}

// knownBenchmarks lists the benchmark names for help and errors.
const knownBenchmarks = "fillseq, fillrandom, fillsync, fill100K, overwrite, readrandom, readmissing, readhot, readseq, readreverse, seekrandom, deleterandom, updaterandom, readwhilewriting, readrandomwriterandom, mergerandom, flush, compact, stats, randread_batch, scan_direct, multireadrandom, fillseqdeterministic, asyncio, deletescan, secondarydelete, prefixscan, fillseqingest"

// benchResult is the merged outcome of one benchmark over its threads.
type benchResult struct {
	name    string
	ops     int64
	bytes   int64
	found   int64 // reads that found their key (readrandom, seekrandom, readwhilewriting)
	reads   int64 // reads attempted, the denominator of found
	elapsed time.Duration
	hist    *hdrhistogram.Histogram // all ops; nil without --histogram
	// hists holds the latencies by operation type (nil where none).
	hists [numBenchOps]*hdrhistogram.Histogram
	// message is db_bench's message of the benchmark (benchSpec.message),
	// printed in place of "(F of R found)".
	message string
}

// line renders r as db_bench does.
func (r *benchResult) line() string {
	secs := r.elapsed.Seconds()
	var micros float64
	var opsPerSec int64
	if r.ops > 0 && secs > 0 {
		micros = secs * 1e6 / float64(r.ops)
		opsPerSec = int64(float64(r.ops) / secs)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-12s : %11.3f micros/op %d ops/sec", r.name, micros, opsPerSec)
	if r.bytes > 0 && secs > 0 {
		fmt.Fprintf(&b, " %.1f MB/s", float64(r.bytes)/(1<<20)/secs)
	}
	switch {
	case r.message != "":
		fmt.Fprintf(&b, " %s", r.message)
	case r.reads > 0:
		fmt.Fprintf(&b, " (%d of %d found)", r.found, r.reads)
	}
	return b.String()
}

// benchRunner runs a list of benchmarks against one database directory.
type benchRunner struct {
	cfg      benchConfig
	out      io.Writer // result lines
	progress io.Writer // "... N ops" lines and skip notices
	dir      string
	tempDir  bool        // dir is a temporary directory of the run, removed afterwards
	lock     *shale.Lock // dir's lock, held for the whole run (bench_dir.go)
	lockFS   vfs.FS      // the file system lock was taken on
	// keptReported is set once the files a fresh database left in --db
	// have been named (reportKept).
	keptReported bool
	db           *shale.DB
	fs           vfs.FS // vfs.Default, or a latencyfs.FS over it (--env_read_*)
	wo           *shale.WriteOptions
	ro           *shale.ReadOptions // --readahead_size, --async_io, --optimize_multiget_for_io
	stats        *shale.Statistics  // --statistics; kept across fresh DBs, reset before each benchmark
	values       []byte             // shared, read-only source of value bytes
	done         atomic.Int64       // ops finished in the running benchmark, for progress
	stop         atomic.Bool        // set when --duration has elapsed

	valuesRatio float64  // the compression ratio values was made for
	keys        [][]byte // --use_existing_keys: the database's keys, read-only
	doneBatch   int64    // ops a thread finishes before adding them to done

	report *benchReport // --report: what the samplers collected; nil without
}

// runBenchmarks runs cfg.benchmarks in order, printing one db_bench line per
// benchmark to out, and returns the results.
func runBenchmarks(out, progress io.Writer, cfg benchConfig) (results []benchResult, err error) {
	defer func() { err = flagError(err, benchOptionFlags) }()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.reads < 0 {
		cfg.reads = cfg.num
	}
	if cfg.seed == 0 {
		cfg.seed = time.Now().UnixNano()
	}
	r := &benchRunner{
		cfg:      cfg,
		out:      out,
		progress: progress,
		fs:       benchFS(&cfg),
		wo:       &shale.WriteOptions{Sync: cfg.sync},
		ro:       cfg.readOptions(),
		values:   benchdata.CompressibleBytes(max(1<<20, 2*cfg.valueSize), 0.5),
	}
	if cfg.statistics {
		r.stats = shale.NewStatistics()
	}
	var rf *reportFile
	if cfg.report != "" {
		if rf, err = createReportFile(cfg.report); err != nil {
			return nil, err
		}
		r.report = &benchReport{start: time.Now()}
		defer func() {
			if err != nil {
				rf.abandon()
			}
		}()
	}
	if err := r.useDir(); err != nil {
		return nil, err
	}
	defer func() {
		if rerr := r.releaseDir(); rerr != nil && err == nil {
			err = rerr
		}
	}()
	if err := r.open(); err != nil {
		return nil, err
	}
	defer func() {
		if r.db == nil { // a failed reopen (recreate, asyncio) left none
			return
		}
		if cerr := r.db.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing %s: %w", r.dir, cerr)
		}
	}()
	r.printHeader()
	for i, name := range cfg.benchmarks {
		res, ran, err := r.runOne(i, name)
		if err != nil {
			return results, fmt.Errorf("%s: %w", name, err)
		}
		if ran {
			results = append(results, res)
		}
	}
	if r.db != nil {
		printAmplification(r.out, r.db.Metrics())
		r.finishReport()
		if err := r.printSpace(); err != nil {
			return results, err
		}
	}
	if rf != nil {
		if err := rf.write(r.report.page(&r.cfg, r.dir)); err != nil {
			return results, err
		}
		fmt.Fprintf(r.progress, "bench: report written to %s\n", cfg.report)
	}
	return results, nil
}

// printAmplification prints, after the run, the write amplification (table
// and blob file bytes flushes and compactions wrote, per user byte) and the
// space on disk: tables, blob files and the part of the blob files' records
// no table references any more (their space amplification).
func printAmplification(out io.Writer, m *shale.Metrics) {
	var tables uint64
	for _, l := range m.Levels {
		tables += l.Size
	}
	fmt.Fprintf(out, "Write amplification: %.2f (%d user bytes written; flushes %d, compactions %d bytes)\n",
		m.WriteAmp, m.UserBytesWritten, m.Flush.BytesWritten, m.Compact.BytesWritten)
	fmt.Fprintf(out, "On disk: %.1f MiB in tables", float64(tables)/(1<<20))
	if m.Blob.Files > 0 {
		amp := 1.0
		if live := m.Blob.TotalBytes - min(m.Blob.GarbageBytes, m.Blob.TotalBytes); live > 0 {
			amp = float64(m.Blob.TotalBytes) / float64(live)
		}
		fmt.Fprintf(out, ", %.1f MiB in %d blob files (%.1f MiB garbage: blob space amplification %.2f)",
			float64(m.Blob.Size)/(1<<20), m.Blob.Files, float64(m.Blob.GarbageBytes)/(1<<20), amp)
	}
	fmt.Fprintln(out)
}

// settleTimeout bounds the wait for background compactions before the
// second space measurement.
const settleTimeout = time.Minute

// printSpace prints the space amplification at the end of the run and again
// once no compaction runs or waits (measureSpace), except on a latency file
// system, where the scan for the live bytes would pay the latency of every
// read.
func (r *benchRunner) printSpace() error {
	if r.cfg.envReadLatency > 0 || r.cfg.envReadBandwidthMB > 0 {
		fmt.Fprintln(r.out, "Space amplification: not measured (the scan would read through --env_read_* latency)")
		return nil
	}
	s, err := measureSpace(r.db, r.fs, r.dir)
	if err != nil {
		return fmt.Errorf("measuring space amplification: %w", err)
	}
	printSpace(r.out, "at the end", s)
	start := time.Now()
	if err := r.db.WaitForCompact(&shale.WaitForCompactOptions{Timeout: settleTimeout}); errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintf(r.out, "Space amplification once compactions are idle: not measured (they ran for more than %s)\n", settleTimeout)
		return nil
	} else if err != nil {
		return fmt.Errorf("waiting for compactions: %w", err)
	}
	waited := time.Since(start)
	if s, err = measureSpace(r.db, r.fs, r.dir); err != nil {
		return fmt.Errorf("measuring space amplification: %w", err)
	}
	printSpace(r.out, fmt.Sprintf("once compactions are idle (after %s)", waited.Round(time.Millisecond)), s)
	return nil
}

func (c *benchConfig) validate() error {
	if len(c.benchmarks) == 0 {
		return errors.New("--benchmarks is empty")
	}
	for _, b := range c.benchmarks {
		if _, ok := benchSpecs[b]; !ok {
			return fmt.Errorf("unknown benchmark %q (known: %s)", b, knownBenchmarks)
		}
	}
	switch {
	case c.num < 1:
		return fmt.Errorf("--num must be positive, got %d", c.num)
	case c.keySize < 1 || c.keySize > 1<<20:
		return fmt.Errorf("--key_size must be between 1 and 1048576, got %d", c.keySize)
	case len(fmt.Sprint(c.num-1)) > c.keySize:
		return fmt.Errorf("--key_size %d is too small for the decimal keys of --num %d", c.keySize, c.num)
	case c.valueSize < 0 || c.valueSize > 64<<20:
		return fmt.Errorf("--value_size must be between 0 and 64 MiB, got %d", c.valueSize)
	case c.threads < 1:
		return fmt.Errorf("--threads must be positive, got %d", c.threads)
	case c.batchSize < 1:
		return fmt.Errorf("--batch_size must be positive, got %d", c.batchSize)
	case c.seekNexts < 0:
		return fmt.Errorf("--seek_nexts must be >= 0, got %d", c.seekNexts)
	case c.duration < 0:
		return fmt.Errorf("--duration must be >= 0, got %v", c.duration)
	case c.envReadLatency < 0 || c.envReadJitter < 0 || c.envReadBandwidthMB < 0:
		return errors.New("--env_read_latency_us, --env_read_jitter_us and --env_read_bandwidth_mb must be >= 0")
	case c.envReadJitter > c.envReadLatency:
		return fmt.Errorf("--env_read_jitter_us %d must not exceed --env_read_latency_us %d",
			c.envReadJitter.Microseconds(), c.envReadLatency.Microseconds())
	case c.readaheadSize < 0:
		return fmt.Errorf("--readahead_size must be >= 0, got %d", c.readaheadSize)
	case c.fileSize < 4096:
		return fmt.Errorf("--file_size must be at least 4096, got %d", c.fileSize)
	case c.scanDBSize < 1:
		return fmt.Errorf("--scan_db_size must be positive, got %d", c.scanDBSize)
	case c.multireadBatchSize < 1:
		return fmt.Errorf("--multiread_batch_size must be positive, got %d", c.multireadBatchSize)
	case c.multireadStride < 0:
		return fmt.Errorf("--multiread_stride must be >= 0, got %d", c.multireadStride)
	case c.numLevels < 2:
		return fmt.Errorf("--num_levels must be at least 2, got %d", c.numLevels)
	case c.deleteWait < 0:
		return fmt.Errorf("--delete_wait must be >= 0, got %v", c.deleteWait.Seconds())
	}
	if _, err := sstable.ParseCompression(c.compression); err != nil {
		return fmt.Errorf("--compression_type: %v", err)
	}
	if _, err := sstable.ParseCompression(c.blobCompression); err != nil {
		return fmt.Errorf("--blob_compression_type: %v", err)
	}
	if _, err := benchMergeOperator(c.mergeOperator); err != nil {
		return err
	}
	if err := c.validatePrefixFlags(); err != nil {
		return err
	}
	return c.validateWorkloadFlags()
}

// benchFS returns the file system of the run: the OS's, wrapped in a
// latency FS for reads when --env_read_* ask for one.
func benchFS(c *benchConfig) vfs.FS {
	if c.envReadLatency <= 0 && c.envReadBandwidthMB <= 0 {
		return vfs.Default
	}
	return latencyfs.New(vfs.Default, latencyfs.Options{
		ReadLatency:   c.envReadLatency,
		ReadJitter:    c.envReadJitter,
		ReadBandwidth: c.envReadBandwidthMB << 20,
		Seed:          uint64(c.seed),
	})
}

func (r *benchRunner) options() (*shale.Options, error) {
	c, err := sstable.ParseCompression(r.cfg.compression)
	if err != nil {
		return nil, err
	}
	bc, err := sstable.ParseCompression(r.cfg.blobCompression)
	if err != nil {
		return nil, err
	}
	indexType := shale.IndexType(r.cfg.indexType)
	if r.cfg.partitionIndexAndFilters {
		indexType = shale.TwoLevelIndexSearch
	}
	if r.cfg.indexType != 0 && r.cfg.indexType != 2 {
		return nil, fmt.Errorf("--index_type=%d: shale has 0 (binary search) and 2 (two-level index search)", r.cfg.indexType)
	}
	o := &shale.Options{
		IndexType:              indexType,
		PartitionFilters:       r.cfg.partitionIndexAndFilters,
		MetadataBlockSize:      r.cfg.metadataBlockSize,
		CreateIfMissing:        !r.cfg.useExistingDB,
		WriteBufferSize:        r.cfg.writeBufferSize,
		BloomBitsPerKey:        r.cfg.bloomBits,
		BlockCacheSize:         r.cfg.cacheSize,
		Compression:            c,
		DisableAutoCompactions: r.cfg.disableAutoComp,
		BlockSize:              r.cfg.blockSize,
		FS:                     r.fs,

		UseDirectReads:                   r.cfg.useDirectReads,
		AllowMmapReads:                   r.cfg.mmapRead,
		AllowMmapWrites:                  r.cfg.mmapWrite,
		UseDirectIOForFlushAndCompaction: r.cfg.useDirectIOForFlush,
		MaxAutoReadaheadSize:             r.cfg.maxAutoReadaheadSize,
		BytesPerSync:                     r.cfg.bytesPerSync,
		DisableIOUring:                   r.cfg.disableIOUring,
		IOUringSQPoll:                    r.cfg.ioUringSQPoll,
		WALBackgroundWrites:              r.cfg.walBackgroundWrites,
		NumLevels:                        r.cfg.numLevels,
		Statistics:                       r.stats,

		TargetFileSizeBase:             r.cfg.targetFileSizeBase,
		MaxBytesForLevelBase:           r.cfg.maxBytesForLevelBase,
		MaxBytesForLevelMultiplier:     r.cfg.maxBytesForLevelMultiplier,
		Level0FileNumCompactionTrigger: r.cfg.level0FileNumCompactionTrigger,
		Level0SlowdownWritesTrigger:    r.cfg.level0SlowdownWritesTrigger,
		Level0StopWritesTrigger:        r.cfg.level0StopWritesTrigger,
		MaxBackgroundJobs:              r.cfg.maxBackgroundJobs,
		MaxWriteBufferNumber:           r.cfg.maxWriteBufferNumber,
		MaxOpenFiles:                   r.cfg.openFiles,

		CacheIndexAndFilterBlocks:        r.cfg.cacheIndexAndFilterBlocks,
		PinL0FilterAndIndexBlocksInCache: r.cfg.pinL0FilterAndIndexBlocks,
		DeletePersistenceThreshold:       r.cfg.deletePersistence,

		EnableBlobFiles:                         r.cfg.enableBlobFiles,
		EnableBlobWriteSeparation:               r.cfg.blobWriteSeparation,
		MinBlobSize:                             r.cfg.minBlobSize,
		BlobFileSize:                            r.cfg.blobFileSize,
		BlobCompression:                         bc,
		EnableBlobGarbageCollection:             r.cfg.enableBlobGC,
		BlobGarbageCollectionAgeCutoff:          r.cfg.blobGCAgeCutoff,
		BlobGarbageCollectionForceThreshold:     r.cfg.blobGCForce,
		BlobGarbageCollectionMaxRelocationBytes: r.cfg.blobGCMaxRelocation,
		BlobFileStartingLevel:                   r.cfg.blobFileStartLevel,
		BlobCacheSize:                           r.cfg.blobCacheSize,
	}
	if o.MergeOperator, err = benchMergeOperator(r.cfg.mergeOperator); err != nil {
		return nil, err
	}
	r.cfg.setPrefixOptions(o)
	if o.MaxAutoReadaheadSize == 0 {
		o.MaxAutoReadaheadSize = -1
	}
	if o.BytesPerSync == 0 {
		o.BytesPerSync = -1
	}
	if n := r.cfg.rateLimiterBytesPerSec; n > 0 {
		o.RateLimiter = shale.NewGenericRateLimiter(n)
	}
	// db_bench's 0 means "none" where shale's zero means "default".
	if o.BloomBitsPerKey <= 0 {
		o.BloomBitsPerKey = -1
	}
	if o.BlockCacheSize <= 0 {
		o.BlockCacheSize = -1
	}
	return o, nil
}

func (r *benchRunner) printHeader() {
	c := &r.cfg
	fmt.Fprintf(r.out, "shale:       version %s\n", shale.Version)
	fmt.Fprintf(r.out, "Keys:        %d bytes each\n", c.keySize)
	fmt.Fprintf(r.out, "Values:      %d bytes each (%d bytes after compression)\n", c.valueSize, c.compressedValueSize())
	for _, name := range c.benchmarks {
		// A benchmark with a value size of its own uses it unless
		// --value_size was given (deletescan's 500 bytes).
		if spec := benchSpecs[name]; spec.defaultValueSize > 0 && !c.valueSizeSet {
			fmt.Fprintf(r.out, "Values:      %d bytes each in %s (its own default)\n", spec.defaultValueSize, name)
		}
	}
	fmt.Fprintf(r.out, "Entries:     %d\n", c.num)
	fmt.Fprintf(r.out, "Compression: %s\n", c.compression)
	fmt.Fprintf(r.out, "Seed:        %d\n", c.seed)
	fmt.Fprintf(r.out, "DB:          %s\n", r.dir)
	if l, ok := r.fs.(*latencyfs.FS); ok {
		o := l.Options()
		bw := "unlimited"
		if o.ReadBandwidth > 0 {
			bw = fmt.Sprintf("%d MiB/s", o.ReadBandwidth>>20)
		}
		fmt.Fprintf(r.out, "Env:         read latency %dus +- %dus, read bandwidth %s\n",
			o.ReadLatency.Microseconds(), o.ReadJitter.Microseconds(), bw)
	}
	fmt.Fprintln(r.out, "------------------------------------------------")
}

// runOne runs benchmark number idx of the list. ran is false when it was
// skipped or produces no db_bench line (stats).
func (r *benchRunner) runOne(idx int, name string) (res benchResult, ran bool, err error) {
	spec := benchSpecs[name]
	if name == "stats" {
		_, err := fmt.Fprint(r.out, r.db.Metrics().String())
		return res, false, err
	}
	if spec.freshDB {
		if r.cfg.useExistingDB {
			fmt.Fprintf(r.progress, "%-12s : skipped (--use_existing_db is true)\n", name)
			return res, false, nil
		}
		if err := r.recreate(); err != nil {
			return res, false, err
		}
	}
	restore, err := r.beginBenchmark(spec)
	if err != nil {
		return res, false, err
	}
	defer restore()
	readers := r.cfg.threads
	if spec.control {
		readers = 1
	}
	threads := make([]*benchThread, readers)
	for i := range threads {
		threads[i] = r.newThread(idx, i)
		threads[i].setOp(spec.op)
	}
	var writer *benchThread
	if spec.writer {
		writer = r.newThread(idx, readers)
	}

	// Group commit of the write benchmarks with several writers or synced
	// writes: its sizes are printed on a line after theirs (commitMessage).
	var commitsBefore *shale.Metrics
	if spec.op == opWrite && spec.message == nil && (readers > 1 || r.wo.Sync) {
		commitsBefore = r.db.Metrics()
	}
	r.done.Store(0)
	r.stop.Store(false)
	// On a terminal the progress line takes the place of the "... N ops"
	// lines.
	lineOut := r.progressLineOut(spec)
	stopProgress := func() {}
	if lineOut == nil {
		stopProgress = r.startProgress()
	}
	stopProgressLine := startProgressLine(lineOut, name, "ops", r.expectedOps(spec, readers), r.done.Load)
	stopSampler := r.startSampler(name)
	stopStatsInterval := r.startStatsInterval(readers)
	var timer *time.Timer
	if r.cfg.duration > 0 {
		timer = time.AfterFunc(r.cfg.duration, func() { r.stop.Store(true) })
	}

	var wg sync.WaitGroup
	errs := make([]error, readers+1)
	var writerDone chan struct{}
	if writer != nil {
		writerDone = make(chan struct{})
		go func() {
			defer close(writerDone)
			errs[readers] = r.writeWhileReading(writer)
		}()
	}
	for i, t := range threads {
		wg.Go(func() {
			// monotime, not time.Now: on Windows time.Now moves by clock
			// ticks, and a benchmark of short ops measured 0 s.
			t.start = monotime.Now()
			t.last = t.start
			errs[i] = spec.fn(r, t)
			t.end = monotime.Now()
		})
	}
	wg.Wait()
	if writer != nil {
		r.stop.Store(true) // the writer runs as long as the readers do
		<-writerDone
	}
	if timer != nil {
		timer.Stop()
	}
	stopProgress()
	stopStatsInterval()
	stopProgressLine()
	res = mergeThreads(name, threads)
	stopSampler(res)
	if err := errors.Join(errs...); err != nil {
		return res, false, err
	}

	if spec.message != nil {
		res.message = spec.message(&res)
	}
	commits := ""
	if commitsBefore != nil {
		commits = commitMessage(commitsBefore, r.db.Metrics())
	}
	if !spec.ownOutput {
		fmt.Fprintln(r.out, res.line())
		if commits != "" {
			fmt.Fprintf(r.out, "%-12s : %s\n", name, commits)
		}
		if r.cfg.histogram && res.hist != nil {
			fmt.Fprint(r.out, res.histogramText())
		}
	}
	if r.cfg.ioStats {
		fmt.Fprintf(r.out, "%-12s : DB %s\n", name, formatIOMetrics(&r.db.Metrics().IO))
	}
	if r.stats != nil {
		// The benchmark's own: beginBenchmark reset them. (db_bench prints
		// its statistics once, at the end, for the whole run.)
		fmt.Fprintf(r.out, "STATISTICS:\n%s", r.stats.String())
	}
	return res, true, nil
}

// commitMessage describes the commit groups between two metrics of a DB:
// how many batches (writes) each group carried, and per WAL file sync.
func commitMessage(before, after *shale.Metrics) string {
	groups := after.Commit.Groups - before.Commit.Groups
	batches := after.Commit.Batches - before.Commit.Batches
	syncs := after.WAL.FileSyncs - before.WAL.FileSyncs
	if groups == 0 {
		return ""
	}
	msg := fmt.Sprintf("commits: %d writes in %d groups, %.1f per group", batches, groups, float64(batches)/float64(groups))
	if syncs > 0 {
		msg += fmt.Sprintf("; %d WAL syncs, %.1f writes per sync", syncs, float64(batches)/float64(syncs))
	}
	return msg
}

// startProgress prints "... N ops" every progressEvery while a benchmark
// runs; the returned func stops it.
func (r *benchRunner) startProgress() func() {
	if r.cfg.progressEvery <= 0 || r.progress == nil {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(r.cfg.progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				fmt.Fprintf(r.progress, "... %d ops\n", r.done.Load())
			}
		}
	})
	return func() { close(quit); wg.Wait() }
}

func mergeThreads(name string, threads []*benchThread) benchResult {
	res := benchResult{name: name}
	var first, last time.Time
	for i, t := range threads {
		res.ops += t.ops
		res.bytes += t.bytes
		res.found += t.found
		res.reads += t.reads
		if i == 0 || t.start.Before(first) {
			first = t.start
		}
		if i == 0 || t.end.After(last) {
			last = t.end
		}
		for op, h := range t.hists {
			if h == nil || h.TotalCount() == 0 {
				continue
			}
			if res.hist == nil {
				res.hist = newLatencyHistogram()
			}
			res.hist.Merge(h)
			if res.hists[op] == nil {
				res.hists[op] = newLatencyHistogram()
			}
			res.hists[op].Merge(h)
		}
	}
	res.elapsed = last.Sub(first)
	return res
}

// benchThread is one thread's state; nothing in it is shared.
type benchThread struct {
	rng         *rand.Rand
	key         []byte
	valuePos    int
	ops, bytes  int64
	found       int64
	reads       int64
	unreported  int64 // ops not yet added to benchRunner.done
	start, end  time.Time
	last        time.Time               // end of the previous op, for the histogram
	hist        *hdrhistogram.Histogram // where finished records: hists[op] (setOp)
	hists       [numBenchOps]*hdrhistogram.Histogram
	runner      *benchRunner
	batch       *shale.Batch
	batchFilled int
	// readBuf is the buffer reads copy values into (DB.AppendValue), reused
	// as db_bench reuses its value string.
	readBuf []byte
}

// benchRNG returns the random source of thread thread of benchmark number
// bench; tests rebuild it to predict which keys a benchmark touched.
func benchRNG(seed int64, bench, thread int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(bench)<<32|uint64(thread)))
}

func (r *benchRunner) newThread(bench, thread int) *benchThread {
	t := &benchThread{
		rng:    benchRNG(r.cfg.seed, bench, thread),
		key:    make([]byte, r.cfg.keySize),
		runner: r,
	}
	// Threads start at different values; not drawn from rng, so that the
	// key sequence depends only on the seed.
	t.valuePos = thread * 7919 % (len(r.values) - r.cfg.valueSize + 1)
	return t
}

// newLatencyHistogram records nanoseconds from 1 ns to 1 hour, 3 digits.
func newLatencyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(time.Hour), 3)
}

// finished accounts for n ops moving bytes; called after each op or batch.
func (t *benchThread) finished(n int64, bytes int64) {
	t.ops += n
	t.bytes += bytes
	if t.hist != nil {
		now := monotime.Now()
		d := now.Sub(t.last).Nanoseconds()
		t.last = now
		_ = t.hist.RecordValue(min(max(d, 1), t.hist.HighestTrackableValue()))
	}
	t.unreported += n
	if t.unreported >= t.runner.doneBatch {
		t.runner.done.Add(t.unreported)
		t.unreported = 0
	}
}

// more reports whether op i should run: below limit, or while --duration
// has not elapsed for benchmarks that honour it.
func (t *benchThread) more(i, limit int64, timed bool) bool {
	if timed && t.runner.cfg.duration > 0 {
		return !t.runner.stop.Load()
	}
	return i < limit
}

// makeKey formats k as zero-padded decimal filling t.key exactly; with
// --use_existing_keys it returns the k-th key of the database, which the
// caller must not change.
func (t *benchThread) makeKey(k int64) []byte {
	if keys := t.runner.keys; keys != nil {
		return keys[k] // --use_existing_keys
	}
	t.runner.cfg.formatKey(t.key, k)
	return t.key
}

func (t *benchThread) randomKey() []byte {
	return t.makeKey(t.rng.Int64N(t.runner.cfg.num))
}

// value returns the next value: a window of the shared compressible bytes.
func (t *benchThread) value() []byte {
	n := t.runner.cfg.valueSize
	if t.valuePos+n > len(t.runner.values) {
		t.valuePos = 0
	}
	v := t.runner.values[t.valuePos : t.valuePos+n]
	t.valuePos += n
	return v
}

// write performs num writes of keys chosen by next, batch_size per write.
func (r *benchRunner) write(t *benchThread, timed bool, next func(i int64) []byte) error {
	bs := r.cfg.batchSize
	if bs > 1 && t.batch == nil {
		t.batch = r.db.NewBatch()
	}
	for i := int64(0); t.more(i, r.cfg.num, timed); {
		if bs == 1 {
			k, v := next(i), t.value()
			if err := r.db.Put(k, v, r.wo); err != nil {
				return err
			}
			i++
			t.finished(1, int64(len(k)+len(v)))
			continue
		}
		t.batch.Reset()
		var n int64
		var bytes int64
		for ; n < int64(bs) && (timed && r.cfg.duration > 0 || i < r.cfg.num); n++ {
			k, v := next(i), t.value()
			t.batch.Put(k, v)
			bytes += int64(len(k) + len(v))
			i++
		}
		if err := r.db.Write(t.batch, r.wo); err != nil {
			return err
		}
		t.finished(n, bytes)
	}
	return nil
}

func benchFillSeq(r *benchRunner, t *benchThread) error {
	// Sequential fills ignore --duration, as db_bench: keys past num would
	// not fit key_size.
	return r.write(t, false, t.makeKey)
}

func benchFillRandom(r *benchRunner, t *benchThread) error {
	return r.write(t, true, func(int64) []byte { return t.randomKey() })
}

func benchDeleteRandom(r *benchRunner, t *benchThread) error {
	bs := r.cfg.batchSize
	if bs > 1 && t.batch == nil {
		t.batch = r.db.NewBatch()
	}
	for i := int64(0); t.more(i, r.cfg.num, true); {
		if bs == 1 {
			if err := r.db.Delete(t.randomKey(), r.wo); err != nil {
				return err
			}
			i++
			t.finished(1, 0)
			continue
		}
		t.batch.Reset()
		var n int64
		for ; n < int64(bs) && (r.cfg.duration > 0 || i < r.cfg.num); n++ {
			t.batch.Delete(t.randomKey())
			i++
		}
		if err := r.db.Write(t.batch, r.wo); err != nil {
			return err
		}
		t.finished(n, 0)
	}
	return nil
}

func benchReadRandom(r *benchRunner, t *benchThread) error {
	return r.readKeys(t, t.randomKey)
}

// writeWhileReading is readwhilewriting's writer: random overwrites until
// the readers finish.
func (r *benchRunner) writeWhileReading(t *benchThread) error {
	for !r.stop.Load() {
		if err := r.db.Put(t.randomKey(), t.value(), r.wo); err != nil {
			return err
		}
	}
	return nil
}

func benchReadSeq(r *benchRunner, t *benchThread) error {
	return r.scan(t, false)
}

func benchReadReverse(r *benchRunner, t *benchThread) error {
	return r.scan(t, true)
}

func (r *benchRunner) scan(t *benchThread, reverse bool) error {
	it := r.db.NewIterator(r.ro)
	pos, step := it.First, it.Next
	if reverse {
		pos, step = it.Last, it.Prev
	}
	var i int64
	for ok := pos(); ok && i < r.cfg.reads; ok = step() {
		i++
		t.finished(1, int64(len(it.Key())+len(it.Value())))
	}
	err := it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return err
}

func benchSeekRandom(r *benchRunner, t *benchThread) error {
	it := r.db.NewIterator(r.ro)
	var err error
	for i := int64(0); t.more(i, r.cfg.reads, true); i++ {
		k := t.randomKey()
		t.reads++
		var moved int64
		if it.Seek(k) {
			if bytes.Equal(it.Key(), k) {
				t.found++
			}
			moved += int64(len(it.Key()) + len(it.Value()))
			for j := 0; j < r.cfg.seekNexts && it.Next(); j++ {
				moved += int64(len(it.Key()) + len(it.Value()))
			}
		}
		if err = it.Err(); err != nil {
			break
		}
		t.finished(1, moved)
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return err
}

func benchFlush(r *benchRunner, t *benchThread) error {
	if err := r.db.Flush(); err != nil {
		return err
	}
	t.finished(1, 0)
	return nil
}

func benchCompact(r *benchRunner, t *benchThread) error {
	if err := r.db.CompactRange(nil, nil); err != nil {
		return err
	}
	t.finished(1, 0)
	return nil
}

// parseSecondsOrDuration parses a flag given in seconds (a number) or as a
// Go duration ("90s", "1m30s"); it must not be negative.
func parseSecondsOrDuration(flag, v string) (time.Duration, error) {
	var d time.Duration
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(secs) || math.IsInf(secs, 0) || math.Abs(secs) > float64(math.MaxInt64)/float64(time.Second) {
			return 0, fmt.Errorf("%s %q is out of range", flag, v)
		}
		d = time.Duration(secs * float64(time.Second))
	} else if d, err = time.ParseDuration(v); err != nil {
		return 0, fmt.Errorf("%s must be seconds or a Go duration (such as 1m30s), got %q", flag, v)
	}
	if d < 0 {
		return 0, fmt.Errorf("%s must not be negative, got %q", flag, v)
	}
	return d, nil
}
