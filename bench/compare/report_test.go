package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestPrintMarkdownRatioToBestPeer checks the markdown rows: throughput,
// latencies in microseconds and, on shale's row only, its ratio to the
// fastest peer, named.
func TestPrintMarkdownRatioToBestPeer(t *testing.T) {
	var out bytes.Buffer
	results := [][]result{
		{{ops: 100, elapsed: 1e9, p50: 1000, p99: 2500}},
		{{ops: 50, elapsed: 1e9, p50: 2000, p99: 4000}},
		{{ops: 80, elapsed: 1e9, p50: 1500, p99: 3000}},
	}
	res := []engineResources{{peakRSSKiB: 2048, writeBytes: 3 << 20}, {peakRSSKiB: -1, writeBytes: -1}, {}}
	printMarkdown(&out, []string{"fillseq"}, workloadConfig{}, []string{"shale", "pebble", "badger"}, results, res)
	for _, want := range []string{
		"| fillseq | shale | 100 | 1.00 | 2.50 | 1.25 (badger) |",
		"| fillseq | pebble | 50 | 2.00 | 4.00 |  |",
		"| shale | 2.0 | 3.0 | 0.0 | 0.0 |",
		"| pebble | - | - | 0.0 | 0.0 |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no line %q in:\n%s", want, out.String())
		}
	}
}

// TestPrintMarkdownPhases checks deletescan's table: milliseconds per
// engine and shale's over the fastest peer's.
func TestPrintMarkdownPhases(t *testing.T) {
	var out bytes.Buffer
	results := [][]result{
		{{phases: []phase{{"after deletes", 2e6}}}},
		{{phases: []phase{{"after deletes", 4e6}}}},
	}
	printMarkdown(&out, []string{"deletescan"}, workloadConfig{}, []string{"shale", "pebble"}, results, make([]engineResources, 2))
	if want := "| after deletes | 2.000 | 4.000 | 0.50 (pebble) |"; !strings.Contains(out.String(), want) {
		t.Fatalf("no line %q in:\n%s", want, out.String())
	}
}

func TestWorkloadLabel(t *testing.T) {
	cfg := workloadConfig{threads: 2, batchSize: 8, seekNexts: 100}
	if got := workloadLabel("readwhilewriting", workloadConfig{threads: 1}); got != "readwhilewriting (1 reader)" {
		t.Errorf("workloadLabel(readwhilewriting) with one thread = %q", got)
	}
	for name, want := range map[string]string{
		"readrandom":       "readrandom (2 threads)",
		"readwhilewriting": "readwhilewriting (2 readers)",
		"multireadrandom":  "multireadrandom (batch 8)",
		"seekrandom":       "seekrandom (+100 next)",
		"fillseq":          "fillseq",
	} {
		if got := workloadLabel(name, cfg); got != want {
			t.Errorf("workloadLabel(%q) = %q, want %q", name, got, want)
		}
	}
}
