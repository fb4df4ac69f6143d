package main

import (
	"io"
	"testing"
)

// TestBenchFillSeqIngest: fillseqingest loads every key through external
// tables (several, at a tiny --target_file_size_base) and readseq then
// reads them all back in order.
func TestBenchFillSeqIngest(t *testing.T) {
	cfg := tinyConfig(t, "fillseqingest,readseq")
	cfg.num = 3000
	cfg.targetFileSizeBase = 16 << 10
	res := runQuiet(t, cfg)
	if r := res["fillseqingest"]; r.ops != cfg.num || r.bytes != cfg.num*int64(cfg.keySize+cfg.valueSize) {
		t.Errorf("fillseqingest: %d ops, %d bytes", r.ops, r.bytes)
	}
	if r := res["readseq"]; r.ops != cfg.num {
		t.Errorf("readseq after fillseqingest read %d keys, want %d", r.ops, cfg.num)
	}
	cfg.benchmarks, cfg.keysPerPrefix, cfg.prefixSize = []string{"fillseqingest"}, 10, 4
	if _, err := runBenchmarks(io.Discard, io.Discard, cfg); err == nil {
		t.Error("fillseqingest with --keys_per_prefix: no error")
	}
}
