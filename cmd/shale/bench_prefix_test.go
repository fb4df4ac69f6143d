package main

import (
	"strings"
	"testing"
)

// TestBenchPrefixFlagsReachOptions: the prefix flags parse under
// db_bench's names and reach Options and ReadOptions.
func TestBenchPrefixFlagsReachOptions(t *testing.T) {
	cfg := parseBench(t, "--prefix_size", "6", "--keys_per_prefix", "10", "--memtable_bloom_size_ratio", "0.1",
		"--prefix_same_as_start", "--total_order_seek", "--whole_key_filtering=false")
	if cfg.prefixSize != 6 || cfg.keysPerPrefix != 10 || cfg.memtableBloomSizeRatio != 0.1 ||
		!cfg.prefixSameAsStart || !cfg.totalOrderSeek || cfg.wholeKeyFiltering {
		t.Fatalf("parsed %+v", cfg)
	}
	r := &benchRunner{cfg: cfg}
	o, err := r.options()
	if err != nil {
		t.Fatal(err)
	}
	if o.PrefixExtractor == nil || o.PrefixExtractor.Name() != "rocksdb.FixedPrefix.6" || o.MemtablePrefixBloomSizeRatio != 0.1 || !o.DisableWholeKeyFiltering {
		t.Errorf("Options: extractor %v, ratio %g, whole keys off %v", o.PrefixExtractor, o.MemtablePrefixBloomSizeRatio, o.DisableWholeKeyFiltering)
	}
	if ro := cfg.readOptions(); !ro.PrefixSameAsStart || !ro.TotalOrderSeek {
		t.Errorf("ReadOptions %+v", ro)
	}
	if d := parseBench(t); d.prefixSize != 0 || d.keysPerPrefix != 0 || !d.wholeKeyFiltering {
		t.Errorf("defaults: %+v", d)
	}
}

// TestBenchPrefixKeys: with --keys_per_prefix, key number k is its prefix
// number k mod (num / keys_per_prefix) in --prefix_size decimal digits,
// then k; bad combinations fail naming the flag.
func TestBenchPrefixKeys(t *testing.T) {
	cfg := defaultBenchConfig()
	cfg.num, cfg.keySize, cfg.prefixSize, cfg.keysPerPrefix = 1000, 12, 4, 10
	key := make([]byte, cfg.keySize)
	for _, c := range []struct {
		k    int64
		want string
	}{{0, "000000000000"}, {7, "000700000007"}, {123, "002300000123"}, {999, "009900000999"}} {
		cfg.formatKey(key, c.k)
		if string(key) != c.want {
			t.Errorf("key %d = %q, want %q", c.k, key, c.want)
		}
	}
	for _, c := range []struct {
		mod  func(*benchConfig)
		flag string
	}{
		{func(c *benchConfig) { c.prefixSize = 1; c.keysPerPrefix = 1 }, "--prefix_size"},               // 1000 prefixes in 1 digit
		{func(c *benchConfig) { c.prefixSize = 12 }, "--prefix_size"},                                   // no room for the key
		{func(c *benchConfig) { c.prefixSize = 0 }, "--keys_per_prefix"},                                // a prefix of nothing
		{func(c *benchConfig) { c.memtableBloomSizeRatio = -1 }, "--memtable_bloom_size_ratio"},         //
		{func(c *benchConfig) { c.keySize = 6 }, "--key_size"},                                          // 4 digits of prefix, 2 of key
		{func(c *benchConfig) { c.keysPerPrefix = 0; c.prefixSize = 13 }, "--prefix_size"},              // longer than the key
		{func(c *benchConfig) { c.keysPerPrefix = 0; c.seekMissingPrefix = true }, "--keys_per_prefix"}, // no numbered prefixes
	} {
		bad := cfg
		c.mod(&bad)
		if err := bad.validatePrefixFlags(); err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%+v: error %v, want one naming %s", bad, err, c.flag)
		}
	}
	if err := cfg.validatePrefixFlags(); err != nil {
		t.Errorf("valid flags refused: %v", err)
	}
}

// TestBenchPrefixScan: prefixscan reads every key of the prefixes it
// seeks, in prefix mode and in total order alike.
func TestBenchPrefixScan(t *testing.T) {
	for _, total := range []bool{false, true} {
		cfg := tinyConfig(t, "fillrandom,flush,prefixscan")
		cfg.num, cfg.reads = 2000, 300
		cfg.prefixSize, cfg.keysPerPrefix, cfg.memtableBloomSizeRatio = 4, 10, 0.1
		cfg.totalOrderSeek = total
		res := runQuiet(t, cfg)
		r := res["prefixscan"]
		if r.ops != cfg.reads || r.reads != cfg.reads || r.found < cfg.reads*9/10 {
			t.Errorf("total order %v: prefixscan ops %d, %d of %d found", total, r.ops, r.found, r.reads)
		}
		// fillrandom writes num random keys: about 63% of the key space,
		// some 6 keys per prefix of 10.
		if perScan := r.bytes / int64(cfg.keySize+cfg.valueSize) / max(r.found, 1); perScan < 3 || perScan > 10 {
			t.Errorf("total order %v: %d keys per prefix read, want about 6", total, perScan)
		}
		cfg.benchmarks, cfg.useExistingDB, cfg.seekMissingPrefix = []string{"prefixscan"}, true, true
		if r := runQuiet(t, cfg)["prefixscan"]; r.ops != cfg.reads || r.found != 0 || r.bytes != 0 {
			t.Errorf("total order %v: --seek_missing_prefix: %d ops found %d keys, %d bytes", total, r.ops, r.found, r.bytes)
		}
	}
}
