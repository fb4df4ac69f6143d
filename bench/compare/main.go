package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"
)

func main() {
	if err := mainErr(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

func mainErr(args []string, out, progress io.Writer) (err error) {
	flags := flag.NewFlagSet("compare", flag.ContinueOnError)
	flags.SetOutput(progress)
	num := flags.Int64("num", 1000000, "number of keys")
	benchmarks := flags.String("benchmarks", "fillseq,fillrandom,readrandom,seekrandom", "comma-separated workloads: fillseq, fillrandom, overwrite, fillsync (--num/1000 synced writes), readrandom, readmissing, multireadrandom, readseq, seekrandom, readwhilewriting, deletescan, ycsb_load, ycsb_a, ycsb_b, ycsb_c, ycsb_d, ycsb_e, ycsb_f")
	engineList := flags.String("engines", strings.Join(engineNames(), ","), "comma-separated engines to run, in this order: "+strings.Join(engineNames(), ", ")+untaggedEngines())
	dir := flags.String("dir", "", "parent directory of the engines' databases (default: a temporary directory, removed afterwards)")
	cacheSize := flags.Int64("cache_size", 8<<20, "block cache bytes, the same for every engine")
	valueSize := flags.Int("value_size", 100, "value bytes of the fill workloads (deletescan writes its own 500-byte values)")
	threads := flags.Int("threads", 0, fmt.Sprintf("readrandom, readmissing and readwhilewriting: reading goroutines, each reading --num keys (0: 1); the ycsb workloads: client threads, sharing the operations (0: %d)", defaultYCSBThreads))
	writers := flags.Int("writers", 1, "fillseq, fillrandom, overwrite and fillsync: writing goroutines, sharing the writes")
	batchSize := flags.Int("batch_size", defaultBatchSize, "multireadrandom: keys per MultiGet")
	seekNexts := flags.Int("seek_nexts", 0, "seekrandom: Next calls after each seek")
	reads := flags.Int64("reads", 0, "readrandom, readmissing, multireadrandom and seekrandom: keys read by each reading goroutine (db_bench's --reads; 0: --num)")
	ycsbRecords := flags.Int64("ycsb_records", defaultYCSBRecords, "ycsb_load: records inserted (YCSB's recordcount), which ycsb_a..ycsb_f then read and write")
	ycsbOps := flags.Int64("ycsb_ops", 0, "ycsb_a..ycsb_f: operations of each, shared by its threads (YCSB's operationcount; 0: --ycsb_records)")
	ycsbFields := flags.Int("ycsb_fields", defaultYCSBFields, "YCSB: fields per record (fieldcount)")
	ycsbFieldLength := flags.Int("ycsb_field_length", defaultYCSBFieldLength, "YCSB: bytes per field (fieldlength)")
	report := flags.String("report", "", "also write the markdown tables to this file; a name ending in .html gets an HTML page with plots instead (throughput per second, latency percentiles, ratios to shale, each engine's LSM shape)")
	shape := flags.Bool("shape", false, "print each engine's LSM shape after its runs")
	seed := flags.Uint64("seed", 1, "seed of the key choice")
	deleteWait := flags.Float64("delete_wait", 10, "deletescan: seconds of idle time between the deletes and the second scan")
	walBG := flags.Bool("shale_wal_background_writes", true, "run shale with Options.WALBackgroundWrites, the WAL behaviour Pebble has (a non-sync write returns before its WAL record reaches the OS); false gives shale's default, where it has reached the OS")
	blobFiles := flags.Bool("shale_blob_files", false, "run shale with Options.EnableBlobFiles (key-value separation), to compare with Badger's value log")
	minBlob := flags.Int64("shale_min_blob_size", 0, "shale's Options.MinBlobSize under --shale_blob_files; 0, shale's default, separates every non-empty value")
	blobGC := flags.Bool("shale_blob_gc", false, "run shale with Options.EnableBlobGarbageCollection")
	blobWriteSep := flags.Bool("shale_blob_write_separation", false, "run shale with Options.EnableBlobWriteSeparation under --shale_blob_files (values go to blob files at commit, the WAL holds their indexes)")
	partition := flags.Bool("partition_index_and_filters", false, "shale and RocksDB with partitioned index and filters (two-level index, partitioned filters), as db_bench's flag")
	mmapWrites := flags.Bool("shale_mmap_writes", false, "run shale with Options.AllowMmapWrites (the WAL written through a shared memory mapping; with --shale_wal_background_writes=false, shale's durability with no system call per write)")
	mmapReads := flags.Bool("shale_mmap_reads", false, "run shale with Options.AllowMmapReads (tables and blob files read through memory mappings, as Badger reads its value log)")
	badgerThreshold := flags.Int64("badger_value_threshold", defaultBadgerValueThreshold, "Badger's Options.ValueThreshold: values at least this long go to its value log (the default is Badger's)")
	cpuProfile := flags.String("cpuprofile", "", "write a CPU profile of each engine's process to this file name followed by .ENGINE (go tool pprof)")
	childEngine := flags.String(childEngineFlag, "", "")
	flags.Usage = func() { printUsage(flags, progress) }
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flags.Args())
	}
	if *num < 1 || *num > 1e16 {
		return fmt.Errorf("--num must be between 1 and 1e16, got %d", *num)
	}
	if *valueSize < 0 {
		return fmt.Errorf("--value_size must be >= 0, got %d", *valueSize)
	}
	if *threads < 0 {
		return fmt.Errorf("--threads must be >= 0, got %d", *threads)
	}
	if *writers < 1 || int64(*writers) > *num {
		return fmt.Errorf("--writers must be between 1 and --num, got %d", *writers)
	}
	if *batchSize < 1 {
		return fmt.Errorf("--batch_size must be >= 1, got %d", *batchSize)
	}
	if *seekNexts < 0 {
		return fmt.Errorf("--seek_nexts must be >= 0, got %d", *seekNexts)
	}
	if *minBlob < 0 {
		return fmt.Errorf("--shale_min_blob_size must be >= 0, got %d", *minBlob)
	}
	if *badgerThreshold < 0 {
		return fmt.Errorf("--badger_value_threshold must be >= 0, got %d", *badgerThreshold)
	}
	if *deleteWait < 0 {
		return fmt.Errorf("--delete_wait must be >= 0, got %g", *deleteWait)
	}
	engines, err := parseEngines(*engineList)
	if err != nil {
		return err
	}
	names, err := parseWorkloads(*benchmarks)
	if err != nil {
		return err
	}
	wcfg := workloadConfig{
		num: *num, keySize: 16, valueSize: *valueSize, seed: *seed,
		deleteWait: time.Duration(*deleteWait * float64(time.Second)),
		threads:    *threads, writers: *writers, batchSize: *batchSize, seekNexts: *seekNexts, reads: *reads,
		ycsb: ycsbConfig{records: *ycsbRecords, ops: *ycsbOps, fields: *ycsbFields, fieldLength: *ycsbFieldLength},
	}
	if err := checkYCSBFlags(wcfg); err != nil {
		return err
	}
	if *childEngine != "" {
		child, err := parseEngines(*childEngine)
		if err != nil {
			return fmt.Errorf("--%s: %w", childEngineFlag, err)
		}
		if *dir == "" {
			return fmt.Errorf("--%s needs --dir", childEngineFlag)
		}
		ecfg := engineConfig{
			cacheSize:                *cacheSize,
			writeBufferSize:          64 << 20,
			bloomBits:                10,
			shaleWALBackgroundWrites: *walBG,
			shaleBlobFiles:           *blobFiles,
			shaleMinBlobSize:         *minBlob,
			shaleBlobGC:              *blobGC,
			shaleBlobWriteSeparation: *blobWriteSep,
			shaleMmapReads:           *mmapReads,
			shaleMmapWrites:          *mmapWrites,
			badgerValueThreshold:     *badgerThreshold,
			partitionIndexAndFilters: *partition,
		}
		return runChildEngine(child[0], names, *dir, wcfg, ecfg, *shape, isHTMLReport(*report), *cpuProfile, out, progress)
	}
	root := *dir
	if root == "" {
		if root, err = os.MkdirTemp("", "shale-compare-"); err != nil {
			return err
		}
		defer func() {
			if rerr := os.RemoveAll(root); rerr != nil && err == nil {
				err = rerr
			}
		}()
	}
	results := make([][]result, len(engines))
	res := make([]engineResources, len(engines))
	shapes := make([]string, len(engines))
	for e, eng := range engines {
		run, err := runChild(eng.name, args, root, progress)
		if err != nil {
			return err
		}
		if len(run.results) != len(names) {
			return fmt.Errorf("%s: child process reported %d results for %d workloads", eng.name, len(run.results), len(names))
		}
		results[e] = run.results
		res[e] = engineResources{peakRSSKiB: run.peakRSSKiB, writeBytes: run.writeBytes}
		shapes[e] = run.shape
		edir := filepath.Join(root, eng.name)
		if res[e].size, err = dirSize(edir); err != nil {
			return fmt.Errorf("%s: %w", eng.name, err)
		}
		if *dir == "" {
			if err := removeAll(edir); err != nil {
				return err
			}
		}
	}
	ran := make([]string, len(engines))
	for i, eng := range engines {
		ran[i] = eng.name
	}
	sizes := make([]diskSize, len(engines))
	for e := range res {
		sizes[e] = res[e].size
	}
	printTable(out, names, ran, results)
	printSizes(out, names[len(names)-1], ran, sizes)
	var md bytes.Buffer
	printMarkdown(&md, names, wcfg, ran, results, res)
	fmt.Fprintln(out)
	if _, err := out.Write(md.Bytes()); err != nil {
		return err
	}
	switch {
	case isHTMLReport(*report):
		page := comparePage(names, wcfg, ran, results, res, shapes)
		return os.WriteFile(*report, []byte(page.HTML()), 0o644)
	case *report != "":
		return os.WriteFile(*report, md.Bytes(), 0o644)
	}
	return nil
}

// checkYCSBFlags checks the YCSB flags: go-ycsb's client exits the process
// when a thread would get no operation.
func checkYCSBFlags(cfg workloadConfig) error {
	c, threads := cfg.ycsb, int64(cfg.ycsbThreads())
	switch {
	case c.records < threads:
		return fmt.Errorf("--ycsb_records must be at least the YCSB threads (--threads, %d), got %d", threads, c.records)
	case c.ops < 0:
		return fmt.Errorf("--ycsb_ops must be >= 0, got %d", c.ops)
	case c.operations() < threads:
		return fmt.Errorf("--ycsb_ops must be at least the YCSB threads (--threads, %d), got %d", threads, c.ops)
	case c.fields < 1:
		return fmt.Errorf("--ycsb_fields must be >= 1, got %d", c.fields)
	case c.fieldLength < 1:
		return fmt.Errorf("--ycsb_field_length must be >= 1, got %d", c.fieldLength)
	}
	return nil
}

// runChildEngine is the child process's part: it runs the workloads on eng
// (under a CPU profile if asked) and writes its engineReport to out.
// go-ycsb prints to os.Stdout, which carries the report to the parent; the
// child points os.Stdout at os.Stderr, with the progress, while it runs.
func runChildEngine(eng namedOpener, names []string, root string, wcfg workloadConfig, ecfg engineConfig, shape, keepShape bool, cpuProfile string, out, progress io.Writer) (err error) {
	stdout := os.Stdout
	os.Stdout = os.Stderr
	defer func() { os.Stdout = stdout }()
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile + "." + eng.name)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}()
	}
	results, shapeText, err := runEngine(eng, names, root, wcfg, ecfg, shape, keepShape, progress)
	if err != nil {
		return err
	}
	return writeEngineReport(out, results, shapeText)
}

// printUsage prints the flags as the flag package does, without the one
// that only compare itself passes to its child processes.
func printUsage(flags *flag.FlagSet, w io.Writer) {
	fmt.Fprintln(w, "Usage of compare:")
	flags.VisitAll(func(f *flag.Flag) {
		if f.Name == childEngineFlag {
			return
		}
		kind, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s %s\n    \t%s", f.Name, kind, usage)
		if f.DefValue != "" && f.DefValue != "false" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// parseWorkloads turns --benchmarks into workload names, in the order given.
func parseWorkloads(list string) ([]string, error) {
	var names []string
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if _, ok := workloads[n]; !ok {
			return nil, fmt.Errorf("unknown workload %q", n)
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return nil, errors.New("--benchmarks is empty")
	}
	return names, nil
}

// engineOpeners lists the engines --engines may name. Engines built only
// under a tag (rocksdb_engine.go) add themselves in an init function.
var engineOpeners = []namedOpener{{"shale", openShale}, {"pebble", openPebble}, {"badger", openBadger}, {"goleveldb", openGoleveldb}}

// taggedEngines names the engines that need a build tag, and the tag.
var taggedEngines = map[string]string{"rocksdb": "rocksdb"}

type namedOpener struct {
	name string
	open opener
}

// engineNames lists the engines this build has, in engineOpeners order.
func engineNames() []string {
	names := make([]string, len(engineOpeners))
	for i, o := range engineOpeners {
		names[i] = o.name
	}
	return names
}

// untaggedEngines names, for --engines' usage, the engines this build
// lacks and the tag each needs.
func untaggedEngines() string {
	var missing []string
	for name, tag := range taggedEngines {
		if !slices.Contains(engineNames(), name) {
			missing = append(missing, fmt.Sprintf("%s with -tags %s", name, tag))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	slices.Sort(missing)
	return " (" + strings.Join(missing, ", ") + ")"
}

// parseEngines turns --engines into openers, in the order given.
func parseEngines(list string) ([]namedOpener, error) {
	var engines []namedOpener
	seen := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		i := slices.IndexFunc(engineOpeners, func(o namedOpener) bool { return o.name == n })
		if i < 0 {
			if tag, ok := taggedEngines[n]; ok {
				return nil, fmt.Errorf("--engines: engine %q is not in this build: build with -tags %s (go run -tags %s .), after installing its library (install-%s.sh)", n, tag, tag, n)
			}
			return nil, fmt.Errorf("--engines: unknown engine %q (want one of %s)", n, strings.Join(engineNames(), ", "))
		}
		if seen[n] {
			return nil, fmt.Errorf("--engines: %q named twice", n)
		}
		seen[n] = true
		engines = append(engines, engineOpeners[i])
	}
	if len(engines) == 0 {
		return nil, errors.New("--engines is empty")
	}
	return engines, nil
}

// printTable prints, for each workload, each engine's ops/sec and the
// ratio of shale's to each other engine's (when shale ran), then, for the
// workloads timed in phases (deletescan), each phase's milliseconds per
// engine and the same ratios.
func printTable(w io.Writer, names, engines []string, results [][]result) {
	shale := slices.Index(engines, "shale")
	var peers []int
	for e, n := range engines {
		if n != "shale" && shale >= 0 {
			peers = append(peers, e)
		}
	}
	header := true
	for i, n := range names {
		if results[0][i].phases != nil {
			continue
		}
		if header {
			fmt.Fprintf(w, "%-16s", "workload")
			for _, e := range engines {
				fmt.Fprintf(w, " %16s", e+" ops/sec")
			}
			for _, p := range peers {
				fmt.Fprintf(w, " %14s", "shale/"+engines[p])
			}
			fmt.Fprintln(w)
			header = false
		}
		fmt.Fprintf(w, "%-16s", n)
		for e := range engines {
			fmt.Fprintf(w, " %16.0f", results[e][i].opsPerSec())
		}
		for _, p := range peers {
			fmt.Fprintf(w, " %14s", ratio(results[shale][i].opsPerSec(), results[p][i].opsPerSec()))
		}
		fmt.Fprintln(w)
	}
	for i, n := range names {
		if results[0][i].phases == nil {
			continue
		}
		fmt.Fprintf(w, "%-12s %-24s", n, "phase")
		for _, e := range engines {
			fmt.Fprintf(w, " %12s", e+" ms")
		}
		for _, p := range peers {
			fmt.Fprintf(w, " %14s", "shale/"+engines[p])
		}
		fmt.Fprintln(w)
		for j, p := range results[0][i].phases {
			ms := make([]float64, len(engines))
			for e := range engines {
				if j < len(results[e][i].phases) {
					ms[e] = float64(results[e][i].phases[j].elapsed.Nanoseconds()) / 1e6
				}
			}
			fmt.Fprintf(w, "%-12s %-24s", n, p.name)
			for e := range engines {
				fmt.Fprintf(w, " %12.3f", ms[e])
			}
			for _, q := range peers {
				fmt.Fprintf(w, " %14s", ratio(ms[shale], ms[q]))
			}
			fmt.Fprintln(w)
		}
	}
}

// diskSize is what an engine's directory holds: the bytes of its files and
// the disk space they take (du), which differ by preallocation (Pebble
// fallocates each WAL to about the memtable size) and sparse files (Badger's
// DISCARD file is 1 MiB long and mostly holes).
type diskSize struct{ bytes, allocated int64 }

// printSizes prints each engine's on-disk size after its last workload.
// It stands in for write amplification, which the engines cannot report
// alike: Badger counts no compaction bytes written, and shale's and
// Pebble's WriteAmp count different things. The sizes include the WALs an
// engine leaves at close: Badger flushes its memtable at Close, Pebble
// does not.
func printSizes(w io.Writer, last string, engines []string, sizes []diskSize) {
	fmt.Fprintf(w, "on-disk size after %s, closed (each engine's directory):\n", last)
	fmt.Fprintf(w, "  %-9s %12s %16s\n", "engine", "file MiB", "allocated MiB")
	for e, n := range engines {
		fmt.Fprintf(w, "  %-9s %12.1f %16.1f\n", n, float64(sizes[e].bytes)/(1<<20), float64(sizes[e].allocated)/(1<<20))
	}
}

// dirSize sums the regular files under dir.
func dirSize(dir string) (diskSize, error) {
	var total diskSize
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total.bytes += info.Size()
		total.allocated += diskUsage(info)
		return nil
	})
	return total, err
}

func removeAll(dir string) error { return os.RemoveAll(dir) }
