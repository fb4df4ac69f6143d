package main

import (
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func newBenchCmd() *cobra.Command {
	cfg := defaultBenchConfig()
	var (
		benchmarks string
		duration   int
	)
	cmd := &cobra.Command{
		Use:   "bench [flags]",
		Short: "Run db_bench-compatible benchmarks",
		Long: `bench runs workloads named as in RocksDB's db_bench and prints one
db_bench-style line per benchmark, e.g.

  fillrandom   :       2.345 micros/op 426401 ops/sec 44.2 MB/s

Without --benchmarks it runs a short suite (` + defaultSuite + `) with
--num 100000 (unless --num is given) on a temporary directory that is removed
afterwards. Keys are zero-padded decimal numbers of exactly --key_size bytes;
values are pseudo-random bytes that compress to about half their size.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			flags := cmd.Flags()
			if flags.Changed("benchmarks") {
				cfg.benchmarks = splitList(benchmarks)
			} else if !flags.Changed("num") {
				cfg.num = 100000
			}
			cfg.duration = time.Duration(duration) * time.Second
			_, err := runBenchmarks(cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&benchmarks, "benchmarks", defaultSuite,
		"comma-separated list of: fillseq, fillrandom, overwrite, readrandom, readseq, readreverse, seekrandom, deleterandom, readwhilewriting, flush, compact, stats")
	f.Int64Var(&cfg.num, "num", cfg.num, "number of keys (and of writes per thread)")
	f.Int64Var(&cfg.reads, "reads", cfg.reads, "number of reads per thread (-1 = --num)")
	f.IntVar(&cfg.keySize, "key_size", cfg.keySize, "size of each key in bytes")
	f.IntVar(&cfg.valueSize, "value_size", cfg.valueSize, "size of each value in bytes")
	f.IntVar(&cfg.threads, "threads", cfg.threads, "number of concurrent threads (readers, for readwhilewriting)")
	f.IntVar(&cfg.batchSize, "batch_size", cfg.batchSize, "entries per write batch")
	f.IntVar(&cfg.seekNexts, "seek_nexts", cfg.seekNexts, "Next calls after each Seek in seekrandom")
	f.StringVar(&cfg.db, "db", "", "database directory (default: a fresh temporary directory, removed afterwards)")
	f.BoolVar(&cfg.useExistingDB, "use_existing_db", false, "use the database in --db as it is; skip fillseq/fillrandom")
	f.StringVar(&cfg.compression, "compression_type", cfg.compression, "block compression: snappy, zstd or none")
	f.IntVar(&cfg.bloomBits, "bloom_bits", cfg.bloomBits, "bloom filter bits per key (<= 0 = no filter)")
	f.Int64Var(&cfg.cacheSize, "cache_size", cfg.cacheSize, "block cache size in bytes (<= 0 = no cache)")
	f.IntVar(&cfg.writeBufferSize, "write_buffer_size", cfg.writeBufferSize, "memtable size in bytes")
	f.BoolVar(&cfg.sync, "sync", false, "sync the WAL on every write")
	f.BoolVar(&cfg.disableAutoComp, "disable_auto_compactions", false, "turn off automatic compactions")
	f.BoolVar(&cfg.histogram, "histogram", false, "print latency percentiles of each benchmark")
	f.Int64Var(&cfg.seed, "seed", 0, "seed of the key choice (0 = from the clock; the seed used is printed)")
	f.IntVar(&duration, "duration", 0, "seconds each random benchmark runs (0 = use --num/--reads)")
	return cmd
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
