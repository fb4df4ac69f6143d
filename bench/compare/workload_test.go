package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// mapEngine is a reference engine: a map and a sorted key list. Its lock
// lets readwhilewriting's writer, YCSB's writing threads and the readers
// share it.
type mapEngine struct {
	mu      sync.RWMutex
	m       map[string][]byte
	flushes int
}

func openMap(string, engineConfig) (engine, error) { return &mapEngine{m: map[string][]byte{}}, nil }

func (e *mapEngine) name() string { return "map" }

func (e *mapEngine) put(k, v []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[string(k)] = slices.Clone(v)
	return nil
}

func (e *mapEngine) delete(k []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, string(k))
	return nil
}

func (e *mapEngine) compactAll() error       { return nil }
func (e *mapEngine) newReader() engineReader { return &mapReader{e: e} }
func (e *mapEngine) flush() error            { e.flushes++; return nil }
func (e *mapEngine) close() error            { return nil }
func (e *mapEngine) shape() string           { return "map" }
func (e *mapEngine) keyCount() int           { return len(e.m) }

func (e *mapEngine) newIter() (engineIter, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	keys := make([]string, 0, len(e.m))
	for k := range e.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	values := make([][]byte, len(keys))
	for i, k := range keys {
		values[i] = e.m[k]
	}
	return &mapIter{keys: keys, values: values}, nil
}

// mapReader is one goroutine's reader of a mapEngine.
type mapReader struct {
	e   *mapEngine
	val []byte
}

func (r *mapReader) get(k []byte) (bool, error) {
	r.e.mu.RLock()
	defer r.e.mu.RUnlock()
	v, ok := r.e.m[string(k)]
	if ok {
		r.val = append(r.val[:0], v...)
	}
	return ok, nil
}

func (r *mapReader) value() []byte                       { return r.val }
func (r *mapReader) multiGet(keys [][]byte) (int, error) { return getsInLoop(r, keys) }

// mapIter iterates a copy of the keys and values taken when it was made.
type mapIter struct {
	keys   []string
	values [][]byte
	pos    int
}

func (i *mapIter) seekGE(k []byte) bool {
	i.pos, _ = slices.BinarySearch(i.keys, string(k))
	return i.pos < len(i.keys)
}
func (i *mapIter) next() bool   { i.pos++; return i.pos < len(i.keys) }
func (i *mapIter) key() []byte  { return []byte(i.keys[i.pos]) }
func (i *mapIter) close() error { return nil }

func (i *mapIter) value() ([]byte, error) {
	if i.values == nil {
		return nil, nil
	}
	return i.values[i.pos], nil
}

func TestWorkloadsAgainstMap(t *testing.T) {
	cfg := workloadConfig{num: 500, keySize: 16, valueSize: 100, seed: 3}
	s := newSession(openMap, filepath.Join(t.TempDir(), "db"), cfg, engineConfig{})
	r, err := s.run("fillseq")
	if err != nil || r.ops != 500 || s.eng.(*mapEngine).keyCount() != 500 {
		t.Fatalf("fillseq: %+v %v", r, err)
	}
	for k := range s.eng.(*mapEngine).m {
		if len(k) != 16 || strings.Trim(k, "0123456789") != "" {
			t.Fatalf("key %q is not 16 decimal digits", k)
		}
	}
	for _, w := range []string{"readrandom", "seekrandom"} {
		if r, err := s.run(w); err != nil || r.found != 500 || r.ops != 500 {
			t.Fatalf("%s after fillseq: %+v %v, want all 500 found", w, r, err)
		}
	}
	if f := s.eng.(*mapEngine).flushes; f != 2 {
		t.Errorf("read workloads flushed %d times, want 2", f)
	}
	if _, err := s.run("fillrandom"); err != nil {
		t.Fatal(err)
	}
	distinct := int64(s.eng.(*mapEngine).keyCount())
	if distinct >= 500 || distinct < 250 {
		t.Fatalf("fillrandom wrote %d distinct keys of 500; want repeats", distinct)
	}
	r, err = s.run("readrandom")
	if err != nil || r.found >= 500 || r.found == 0 {
		t.Fatalf("readrandom after fillrandom: %+v %v", r, err)
	}
	if _, err := s.run("nosuch"); err == nil {
		t.Fatal("unknown workload accepted")
	}
}

func TestMainErrTable(t *testing.T) {
	var out, progress bytes.Buffer
	err := mainErr([]string{"--benchmarks", "fillseq,nosuch"}, &out, &progress)
	if err == nil || !strings.Contains(err.Error(), `unknown workload "nosuch"`) {
		t.Fatalf("err %v", err)
	}
	printTable(&out, []string{"fillseq"}, []string{"shale", "pebble"}, [][]result{{{ops: 100, elapsed: 1e9}}, {{ops: 50, elapsed: 1e9}}})
	if !strings.Contains(out.String(), "fillseq") || !strings.Contains(out.String(), " 2.00\n") {
		t.Fatalf("table:\n%s", out.String())
	}
}

// TestPrintTableThreeEngines checks the columns: each engine's ops/sec in
// --engines order, then shale's ratio to each other engine.
func TestPrintTableThreeEngines(t *testing.T) {
	var out bytes.Buffer
	printTable(&out, []string{"fillseq"}, []string{"shale", "pebble", "badger"},
		[][]result{{{ops: 100, elapsed: 1e9}}, {{ops: 50, elapsed: 1e9}}, {{ops: 25, elapsed: 1e9}}})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("table:\n%s", out.String())
	}
	header, row := strings.Fields(lines[0]), strings.Fields(lines[1])
	wantHeader := []string{"workload", "shale", "ops/sec", "pebble", "ops/sec", "badger", "ops/sec", "shale/pebble", "shale/badger"}
	wantRow := []string{"fillseq", "100", "50", "25", "2.00", "4.00"}
	if !slices.Equal(header, wantHeader) || !slices.Equal(row, wantRow) {
		t.Fatalf("table:\n%s", out.String())
	}
	// Without shale there is no ratio to print.
	out.Reset()
	printTable(&out, []string{"fillseq"}, []string{"pebble", "badger"}, [][]result{{{ops: 50, elapsed: 1e9}}, {{ops: 25, elapsed: 1e9}}})
	if strings.Contains(out.String(), "shale/") || !strings.Contains(out.String(), "badger ops/sec") {
		t.Fatalf("table without shale:\n%s", out.String())
	}
}

func TestParseEngines(t *testing.T) {
	engines, err := parseEngines(" badger,shale ")
	if err != nil || len(engines) != 2 || engines[0].name != "badger" || engines[1].name != "shale" {
		t.Fatalf("parseEngines: %v %v", engines, err)
	}
	for list, want := range map[string]string{
		"shale,rocks":   `--engines: unknown engine "rocks"`,
		"pebble,pebble": `--engines: "pebble" named twice`,
		" , ":           "--engines is empty",
	} {
		if _, err := parseEngines(list); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseEngines(%q): %v, want %q", list, err, want)
		}
	}
	// Without -tags rocksdb, naming it says how to build it in.
	if !slices.Contains(engineNames(), "rocksdb") {
		if _, err := parseEngines("shale,rocksdb"); err == nil || !strings.Contains(err.Error(), "build with -tags rocksdb") {
			t.Errorf("parseEngines(rocksdb) without the tag: %v, want an error naming -tags rocksdb", err)
		}
	}
	var out, progress bytes.Buffer
	for _, args := range [][]string{{"--value_size", "-1"}, {"--engines", "nosuch"}} {
		if err := mainErr(args, &out, &progress); err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("mainErr(%q): %v, want an error naming %s", args, err, args[0])
		}
	}
}

// TestEnginesRunEveryWorkload runs every workload on each real engine at
// --num 2000: reads find every key a fillseq wrote, and deletescan checks
// its own live-key counts.
func TestEnginesRunEveryWorkload(t *testing.T) {
	for _, eng := range engineOpeners {
		t.Run(eng.name, func(t *testing.T) {
			const num = 2000
			cfg := workloadConfig{num: num, keySize: 16, valueSize: 100, seed: 3}
			// Badger refuses a memtable below 8 MiB at its default
			// ValueThreshold (1 MiB must fit a batch, 15% of the memtable).
			ecfg := engineConfig{cacheSize: 1 << 20, writeBufferSize: 8 << 20, bloomBits: 10}
			s := newSession(eng.open, filepath.Join(t.TempDir(), eng.name), cfg, ecfg)
			defer s.close()
			if r, err := s.run("fillseq"); err != nil || r.ops != num {
				t.Fatalf("fillseq: %+v %v", r, err)
			}
			for _, w := range []string{"readrandom", "seekrandom"} {
				if r, err := s.run(w); err != nil || r.found != num || r.ops != num {
					t.Fatalf("%s after fillseq: %+v %v, want all %d found", w, r, err, num)
				}
			}
			if _, err := s.run("fillrandom"); err != nil {
				t.Fatal(err)
			}
			for _, w := range []string{"readrandom", "seekrandom"} {
				if r, err := s.run(w); err != nil || r.found == 0 || r.found >= num {
					t.Fatalf("%s after fillrandom: %+v %v, want some but not all found", w, r, err)
				}
			}
			if s.eng.shape() == "" {
				t.Error("empty shape")
			}
			r, err := s.run("deletescan")
			if err != nil || len(r.phases) != 3 {
				t.Fatalf("deletescan: %+v %v", r, err)
			}
			// compactAll left only the live tenth: Badger's reopen with
			// CompactL0OnClose and Flatten dropped the tombstones.
			if e, ok := s.eng.(*badgerEngine); ok {
				var keys uint32
				for _, ti := range e.db.Tables() {
					keys += ti.KeyCount
				}
				if keys != num/10 {
					t.Errorf("badger tables hold %d keys after deletescan's full compaction, want %d", keys, num/10)
				}
			}
			if err := s.close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestBadgerFlushWritesTables checks that the Badger engine's flush leaves
// the data in tables, not in a memtable, as the peers' Flush does, and that
// it keeps every key.
func TestBadgerFlushWritesTables(t *testing.T) {
	cfg := workloadConfig{num: 1000, keySize: 16, valueSize: 100, seed: 3}
	s := newSession(openBadger, filepath.Join(t.TempDir(), "badger"), cfg, engineConfig{cacheSize: 1 << 20, writeBufferSize: 64 << 20})
	defer s.close()
	if _, err := s.run("fillseq"); err != nil {
		t.Fatal(err)
	}
	e := s.eng.(*badgerEngine)
	if n := len(e.db.Tables()); n != 0 {
		t.Fatalf("%d tables before flush with a 64 MiB memtable, want 0", n)
	}
	if err := e.flush(); err != nil {
		t.Fatal(err)
	}
	var keys uint32
	for _, ti := range e.db.Tables() {
		keys += ti.KeyCount
	}
	if keys != 1000 {
		t.Fatalf("tables hold %d keys after flush, want 1000", keys)
	}
}

// TestLargeValueSeparation checks --shale_blob_files and
// --badger_value_threshold with issue 13's 8 KiB values: shale writes blob
// files only when asked, and Badger keeps the values in its tables at its
// default threshold and moves them to the value log below it.
func TestLargeValueSeparation(t *testing.T) {
	const num, valueSize = 200, 8192
	cfg := workloadConfig{num: num, keySize: 16, valueSize: valueSize, seed: 3}
	fill := func(t *testing.T, open opener, ecfg engineConfig) engine {
		ecfg.cacheSize, ecfg.writeBufferSize, ecfg.bloomBits = 1<<20, 64<<20, 10
		s := newSession(open, filepath.Join(t.TempDir(), "db"), cfg, ecfg)
		t.Cleanup(func() { s.close() })
		if _, err := s.run("fillseq"); err != nil {
			t.Fatal(err)
		}
		if r, err := s.run("readrandom"); err != nil || r.found != num {
			t.Fatalf("readrandom: %+v %v", r, err)
		}
		return s.eng
	}
	for _, blob := range []bool{false, true} {
		e := fill(t, openShale, engineConfig{shaleBlobFiles: blob}).(*shaleEngine)
		if files := e.db.Metrics().Blob.Files; (files > 0) != blob {
			t.Errorf("shale with blob files %v: %d blob files", blob, files)
		}
	}
	// Size's LSM bytes are the tables' files (TableInfo.OnDiskSize counts
	// the values in the value log too); flush's reopen has just measured
	// them.
	tableBytes := func(e *badgerEngine) int64 { lsm, _ := e.db.Size(); return lsm }
	// The values compress to about half.
	if n := tableBytes(fill(t, openBadger, engineConfig{}).(*badgerEngine)); n < num*valueSize/4 {
		t.Errorf("badger at its default value threshold: tables hold %d bytes, want the values inline", n)
	}
	if n := tableBytes(fill(t, openBadger, engineConfig{badgerValueThreshold: 1024}).(*badgerEngine)); n > num*1024 {
		t.Errorf("badger with value threshold 1024: tables hold %d bytes, want the values in the value log", n)
	}
}

// TestDeleteScanAgainstMap runs deletescan on the reference engine: three
// phases, each reading the first 500 live keys, with 90% of the keys gone.
func TestDeleteScanAgainstMap(t *testing.T) {
	cfg := workloadConfig{num: 6000, keySize: 16, valueSize: 100, seed: 3}
	s := newSession(openMap, filepath.Join(t.TempDir(), "db"), cfg, engineConfig{})
	r, err := s.run("deletescan")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.phases) != 3 || r.ops != 3*500 {
		t.Fatalf("deletescan: %+v", r)
	}
	if n := s.eng.(*mapEngine).keyCount(); n != 600 {
		t.Fatalf("deletescan left %d keys, want 600", n)
	}
	var out bytes.Buffer
	printTable(&out, []string{"deletescan"}, []string{"shale", "pebble"}, [][]result{{r}, {r}})
	if !strings.Contains(out.String(), "after full compaction") || !strings.Contains(out.String(), "shale ms") {
		t.Fatalf("table:\n%s", out.String())
	}
}

// newWorkloadsOrder runs every workload added for db_bench's names, over a
// fillseq and then over a fillrandom and an overwrite.
var newWorkloadsOrder = []string{
	"fillseq", "readseq", "multireadrandom", "readrandom", "seekrandom", "readwhilewriting",
	"fillrandom", "overwrite", "readseq", "multireadrandom", "readrandom", "seekrandom",
}

// runNewWorkloads runs newWorkloadsOrder on open with two reading
// goroutines and 100 nexts per seek, and returns the results.
func runNewWorkloads(t *testing.T, open opener, num int64) []result {
	t.Helper()
	cfg := workloadConfig{num: num, keySize: 16, valueSize: 100, seed: 3, threads: 2, seekNexts: 100}
	ecfg := engineConfig{cacheSize: 1 << 20, writeBufferSize: 8 << 20, bloomBits: 10}
	s := newSession(open, filepath.Join(t.TempDir(), "db"), cfg, ecfg)
	defer s.close()
	var results []result
	for _, w := range newWorkloadsOrder {
		r, err := s.run(w)
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		if r.p50 <= 0 || r.p99 < r.p50 {
			t.Errorf("%s: p50 %v p99 %v", w, r.p50, r.p99)
		}
		results = append(results, r)
	}
	return results
}

// TestNewWorkloadsAgainstMap checks the new workloads' counts on the
// reference engine: after fillseq every read finds its key, readseq sees
// each key once, the threads read num keys each, and readwhilewriting's
// writer wrote while its readers read.
func TestNewWorkloadsAgainstMap(t *testing.T) {
	const num = 2000
	r := runNewWorkloads(t, openMap, num)
	want := []struct{ ops, found int64 }{
		{num, 0}, {num, num}, {num, num}, {2 * num, 2 * num}, {num, num}, {2 * num, 2 * num},
	}
	for i, w := range want {
		if r[i].ops != w.ops || r[i].found != w.found {
			t.Errorf("%s after fillseq: ops %d found %d, want %d and %d", newWorkloadsOrder[i], r[i].ops, r[i].found, w.ops, w.found)
		}
	}
	if r[5].writes == 0 {
		t.Error("readwhilewriting wrote nothing while reading")
	}
	// After fillrandom and overwrite: readseq's keys are the distinct ones
	// written, some but not all; the point reads find some, not all.
	distinct := r[8].found
	if distinct <= 0 || distinct >= num || r[8].ops != distinct {
		t.Errorf("readseq after overwrite: %+v", r[8])
	}
	for _, i := range []int{9, 10, 11} {
		if r[i].found == 0 || r[i].found >= r[i].ops {
			t.Errorf("%s after overwrite: %+v, want some found", newWorkloadsOrder[i], r[i])
		}
	}
}

// TestEnginesRunNewWorkloads runs the new workloads on every real engine at
// --num 2000 and checks that each reads back what the reference engine
// does: the same keys found by every read workload and the same keys, in
// order, by readseq.
func TestEnginesRunNewWorkloads(t *testing.T) {
	const num = 2000
	want := runNewWorkloads(t, openMap, num)
	for _, eng := range engineOpeners {
		t.Run(eng.name, func(t *testing.T) {
			got := runNewWorkloads(t, eng.open, num)
			for i, w := range newWorkloadsOrder {
				if got[i].ops != want[i].ops || got[i].found != want[i].found {
					t.Errorf("%s (#%d): ops %d found %d, want %d and %d", w, i, got[i].ops, got[i].found, want[i].ops, want[i].found)
				}
			}
		})
	}
}

// TestReadSeqRejectsDisorder checks that readseq fails on an iterator that
// goes backwards.
func TestReadSeqRejectsDisorder(t *testing.T) {
	s := newSession(openBackwards, filepath.Join(t.TempDir(), "db"), workloadConfig{num: 10, keySize: 16}, engineConfig{})
	if _, err := s.run("readseq"); err == nil || !strings.Contains(err.Error(), "readseq: key") {
		t.Fatalf("readseq over keys out of order: %v", err)
	}
}

// backwardsEngine is a mapEngine whose iterator yields its keys in
// descending order.
type backwardsEngine struct{ *mapEngine }

func openBackwards(string, engineConfig) (engine, error) {
	e := &mapEngine{m: map[string][]byte{"a": nil, "b": nil, "c": nil}}
	return backwardsEngine{e}, nil
}

func (e backwardsEngine) newIter() (engineIter, error) {
	return &mapIter{keys: []string{"c", "b", "a"}}, nil
}

// TestGoleveldbFlushWritesTables checks that the goleveldb engine's flush
// (a close and reopen) leaves the data in level-0 tables and keeps every key.
func TestGoleveldbFlushWritesTables(t *testing.T) {
	cfg := workloadConfig{num: 1000, keySize: 16, valueSize: 100, seed: 3}
	s := newSession(openGoleveldb, filepath.Join(t.TempDir(), "goleveldb"), cfg, engineConfig{cacheSize: 1 << 20, writeBufferSize: 64 << 20})
	defer s.close()
	if _, err := s.run("fillseq"); err != nil {
		t.Fatal(err)
	}
	e := s.eng.(*goleveldbEngine)
	tables := func() string {
		n, err := e.db.GetProperty("leveldb.num-files-at-level0")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := tables(); n != "0" {
		t.Fatalf("%s level-0 tables before flush with a 64 MiB memtable, want 0", n)
	}
	if err := e.flush(); err != nil {
		t.Fatal(err)
	}
	if n := tables(); n == "0" {
		t.Fatal("no level-0 table after flush")
	}
	if r, err := s.run("readseq"); err != nil || r.found != 1000 {
		t.Fatalf("readseq after flush: %+v %v", r, err)
	}
}

// TestEnginesRunLargeValues runs issue 13's 8 KiB values through
// fillrandom and readrandom on every engine, and on shale with blob files
// (--shale_blob_files --shale_min_blob_size 4096): each finds the keys the
// reference engine finds, and shale with blob files has written some.
func TestEnginesRunLargeValues(t *testing.T) {
	const num, valueSize = 300, 8192
	cfg := workloadConfig{num: num, keySize: 16, valueSize: valueSize, seed: 3}
	run := func(t *testing.T, open opener, ecfg engineConfig) (fill, read result) {
		ecfg.cacheSize, ecfg.writeBufferSize, ecfg.bloomBits = 1<<20, 8<<20, 10
		s := newSession(open, filepath.Join(t.TempDir(), "db"), cfg, ecfg)
		defer s.close()
		fill, err := s.run("fillrandom")
		if err != nil {
			t.Fatal(err)
		}
		if read, err = s.run("readrandom"); err != nil {
			t.Fatal(err)
		}
		if e, ok := s.eng.(*shaleEngine); ok && ecfg.shaleBlobFiles && e.db.Metrics().Blob.Files == 0 {
			t.Error("shale with blob files wrote none")
		}
		return fill, read
	}
	_, want := run(t, openMap, engineConfig{})
	engines := append(slices.Clip(engineOpeners), namedOpener{"shale-blob", openShale})
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			var ecfg engineConfig
			if eng.name == "shale-blob" {
				ecfg.shaleBlobFiles, ecfg.shaleMinBlobSize = true, 4096
			}
			fill, read := run(t, eng.open, ecfg)
			if fill.ops != num || read.ops != num || read.found != want.found {
				t.Fatalf("fillrandom %d ops, readrandom %d ops found %d; want %d, %d and %d", fill.ops, read.ops, read.found, num, num, want.found)
			}
		})
	}
}

// TestFillWritersShareTheWrites checks the fill workloads under --writers:
// the writers together make num puts, fillseq's shared counter writes every
// key once, and the values are whole slices of the value buffer.
func TestFillWritersShareTheWrites(t *testing.T) {
	for _, writers := range []int{2, 3} {
		cfg := workloadConfig{num: 1001, keySize: 16, valueSize: 100, seed: 3, writers: writers}
		s := newSession(openMap, filepath.Join(t.TempDir(), "db"), cfg, engineConfig{})
		r, err := s.run("fillseq")
		if err != nil || r.ops != 1001 || s.eng.(*mapEngine).keyCount() != 1001 {
			t.Fatalf("fillseq, %d writers: %+v %v, want 1001 distinct keys", writers, r, err)
		}
		for k, v := range s.eng.(*mapEngine).m {
			if len(v) != 100 || !bytes.Contains(s.values, v) {
				t.Fatalf("fillseq, %d writers: key %q has a value of %d bytes not from the value buffer", writers, k, len(v))
			}
		}
		counting := &countingEngine{engine: s.eng}
		s.eng = counting
		r, err = s.run("overwrite")
		if err != nil || r.ops != 1001 || counting.puts.Load() != 1001 {
			t.Fatalf("overwrite, %d writers: %+v %v, %d puts, want 1001", writers, r, err, counting.puts.Load())
		}
		if got := workloadLabel("fillrandom", cfg); got != fmt.Sprintf("fillrandom (%d writers)", writers) {
			t.Errorf("label %q", got)
		}
	}
	if err := mainErr([]string{"--writers", "0"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "--writers") {
		t.Errorf("--writers 0: %v, want an error naming the flag", err)
	}
}

// countingEngine counts the puts made through it.
type countingEngine struct {
	engine
	puts atomic.Int64
}

func (e *countingEngine) put(k, v []byte) error {
	e.puts.Add(1)
	return e.engine.put(k, v)
}

// syncingMapEngine is a mapEngine with a synced put that it counts.
type syncingMapEngine struct {
	mapEngine
	syncs atomic.Int64
}

func (e *syncingMapEngine) putSync(k, v []byte) error {
	e.syncs.Add(1)
	return e.put(k, v)
}

// TestFillSyncWritesAThousandthSynced: fillsync writes num/1000 keys, each
// through the engine's synced put, shared by the writers; it leaves the DB
// unfilled for the read workloads, and an engine without a synced put
// fails it by name.
func TestFillSyncWritesAThousandthSynced(t *testing.T) {
	for _, writers := range []int{1, 3} {
		cfg := workloadConfig{num: 20000, keySize: 16, valueSize: 100, seed: 3, writers: writers}
		eng := &syncingMapEngine{mapEngine: mapEngine{m: map[string][]byte{}}}
		open := func(string, engineConfig) (engine, error) { return eng, nil }
		s := newSession(open, filepath.Join(t.TempDir(), "db"), cfg, engineConfig{})
		r, err := s.run("fillsync")
		if err != nil || r.ops != 20 || eng.syncs.Load() != 20 {
			t.Fatalf("fillsync, %d writers: %+v %v, %d synced puts, want 20", writers, r, err, eng.syncs.Load())
		}
		if s.filled {
			t.Fatalf("fillsync, %d writers: marked the DB filled with 20 of 20000 keys", writers)
		}
	}
	s := newSession(openMap, filepath.Join(t.TempDir(), "db"), workloadConfig{num: 2000, keySize: 16, valueSize: 10}, engineConfig{})
	if _, err := s.run("fillsync"); err == nil || !strings.Contains(err.Error(), "map has no synced put") {
		t.Fatalf("fillsync on an engine without a synced put: %v", err)
	}
}

// TestReadMissingFindsNothing checks readmissing on the reference engine and
// on shale: after fillseq none of its keys is there, and every goroutine
// reads num of them.
func TestReadMissingFindsNothing(t *testing.T) {
	const num = 2000
	for _, e := range []struct {
		name string
		open opener
	}{{"map", openMap}, {"shale", openShale}} {
		cfg := workloadConfig{num: num, keySize: 16, valueSize: 100, seed: 3, threads: 2}
		ecfg := engineConfig{cacheSize: 1 << 20, writeBufferSize: 8 << 20, bloomBits: 10}
		s := newSession(e.open, filepath.Join(t.TempDir(), "db"), cfg, ecfg)
		for _, w := range []string{"fillseq", "readmissing"} {
			r, err := s.run(w)
			if err != nil {
				t.Fatalf("%s %s: %v", e.name, w, err)
			}
			if w == "readmissing" && (r.ops != 2*num || r.found != 0) {
				t.Errorf("%s readmissing: ops %d found %d, want %d and 0", e.name, r.ops, r.found, 2*num)
			}
		}
		s.close()
	}
}

// TestReadsBoundsTheReadWorkloads: --reads sets how many keys each read
// workload reads (per goroutine) over a DB of num keys.
func TestReadsBoundsTheReadWorkloads(t *testing.T) {
	cfg := workloadConfig{num: 1000, keySize: 16, valueSize: 10, seed: 3, threads: 2, reads: 37}
	s := newSession(openMap, filepath.Join(t.TempDir(), "db"), cfg, engineConfig{})
	defer s.close()
	for _, c := range []struct {
		w    string
		want int64
	}{{"fillseq", 1000}, {"readrandom", 74}, {"readmissing", 74}, {"multireadrandom", 37}, {"seekrandom", 37}} {
		r, err := s.run(c.w)
		if err != nil || r.ops != c.want {
			t.Fatalf("%s with --reads 37 and 2 threads: %d ops, %v; want %d", c.w, r.ops, err, c.want)
		}
	}
}
