package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/prop"
	"github.com/pingcap/go-ycsb/pkg/util"
)

// ycsbOrder is every YCSB workload, load first.
var ycsbOrder = []string{"ycsb_load", "ycsb_a", "ycsb_b", "ycsb_c", "ycsb_d", "ycsb_e", "ycsb_f"}

// testYCSBConfig is a small YCSB run: records records of 10 fields of 100
// bytes, as many operations per workload, on YCSB's default 2 threads, or
// on one under the race detector: go-ycsb's generators, shared by the
// threads, keep their last value and zipfian sums unsynchronized.
// TestEnginesTakeConcurrentPuts checks the engines' side under -race.
func testYCSBConfig(records int64) workloadConfig {
	cfg := workloadConfig{num: 100, keySize: 16, valueSize: 100, seed: 3,
		ycsb: ycsbConfig{records: records, fields: 10, fieldLength: 100}}
	if raceEnabled {
		cfg.threads = 1
	}
	return cfg
}

// checkYCSBRuns runs ycsbOrder on s and checks what holds on any engine:
// each workload runs its operations and times them; workload C (all
// reads of loaded records) finds nearly every record it reads, and E's
// scans read more records than they are operations.
func checkYCSBRuns(t *testing.T, s *session, records int64) map[string]result {
	t.Helper()
	results := map[string]result{}
	for _, w := range ycsbOrder {
		r, err := s.run(w)
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		if r.ops != records {
			t.Errorf("%s: %d operations, want %d", w, r.ops, records)
		}
		if r.p50 <= 0 || r.p99 < r.p50 || r.elapsed <= 0 {
			t.Errorf("%s: p50 %v p99 %v elapsed %v", w, r.p50, r.p99, r.elapsed)
		}
		results[w] = r
	}
	if r := results["ycsb_c"]; !nearlyAllFound(r) {
		t.Errorf("ycsb_c found %d of %d records read, want nearly all", r.found, r.ops)
	}
	for _, w := range []string{"ycsb_a", "ycsb_b", "ycsb_f"} {
		if r := results[w]; r.found == 0 {
			t.Errorf("%s found no record", w)
		}
	}
	if r := results["ycsb_e"]; r.found <= r.ops {
		t.Errorf("ycsb_e's %d scans read %d records, want more", r.ops, r.found)
	}
	return results
}

// nearlyAllFound says r's reads found at least 95% of their records. Not
// all: go-ycsb's zipfian key chooser (as YCSB's) picks from records+1
// keys, the last never loaded.
func nearlyAllFound(r result) bool { return r.found >= r.ops*95/100 && r.found <= r.ops }

// TestYCSBAgainstMap runs the YCSB workloads on the reference engine and
// checks the records they leave: every loaded record keeps all its fields
// at their length through the updates and read-modify-writes, and D and E
// insert new ones.
func TestYCSBAgainstMap(t *testing.T) {
	const records = 1000
	s := newSession(openMap, filepath.Join(t.TempDir(), "db"), testYCSBConfig(records), engineConfig{})
	defer s.close()
	checkYCSBRuns(t, s, records)
	m := s.eng.(*mapEngine)
	if n := m.keyCount(); n <= records || n > records+2*records/10 {
		t.Errorf("%d records after the YCSB workloads, want the %d loaded and D's and E's inserts", n, records)
	}
	p := properties.NewProperties()
	p.MustSet(prop.FieldCount, "10")
	codec := util.NewRowCodec(p)
	for k, v := range m.m {
		if !strings.HasPrefix(k, "user") {
			t.Fatalf("key %q is not a YCSB key", k)
		}
		row, err := codec.Decode(v, nil)
		if err != nil || len(row) != 10 {
			t.Fatalf("record %q: %d fields (%v), want 10", k, len(row), err)
		}
		for f, fv := range row {
			if len(fv) != 100 {
				t.Fatalf("record %q field %s: %d bytes, want 100", k, f, len(fv))
			}
		}
	}
}

// TestYCSBLoadsFirst checks that a YCSB transaction workload on a DB that
// ycsb_load has not written loads it first (untimed), and that a fill does
// not count as a load.
func TestYCSBLoadsFirst(t *testing.T) {
	const records = 500
	s := newSession(openMap, filepath.Join(t.TempDir(), "db"), testYCSBConfig(records), engineConfig{})
	defer s.close()
	if _, err := s.run("fillseq"); err != nil {
		t.Fatal(err)
	}
	r, err := s.run("ycsb_c")
	if err != nil || r.ops != records || !nearlyAllFound(r) {
		t.Fatalf("ycsb_c after fillseq: %+v %v, want nearly all %d reads found", r, err, records)
	}
	if n := s.eng.(*mapEngine).keyCount(); n != 100+records {
		t.Fatalf("%d keys, want fillseq's 100 and %d records", n, records)
	}
}

// failingEngine is a mapEngine whose puts fail after the first few.
type failingEngine struct {
	*mapEngine
	puts int
}

func (e *failingEngine) put(k, v []byte) error {
	e.mu.Lock()
	e.puts++
	n := e.puts
	e.mu.Unlock()
	if n > 10 {
		return errors.New("disk full")
	}
	return e.mapEngine.put(k, v)
}

// TestYCSBStopsOnError checks that an engine's error ends the run and is
// returned: go-ycsb's client itself drops it.
func TestYCSBStopsOnError(t *testing.T) {
	open := func(string, engineConfig) (engine, error) {
		return &failingEngine{mapEngine: &mapEngine{m: map[string][]byte{}}}, nil
	}
	s := newSession(open, filepath.Join(t.TempDir(), "db"), testYCSBConfig(100000), engineConfig{})
	defer s.close()
	if _, err := s.run("ycsb_load"); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("ycsb_load on a failing engine: %v, want its error", err)
	}
}

// TestEnginesRunYCSB runs every YCSB workload on each real engine with
// 2000 records.
func TestEnginesRunYCSB(t *testing.T) {
	for _, eng := range engineOpeners {
		t.Run(eng.name, func(t *testing.T) {
			const records = 2000
			ecfg := engineConfig{cacheSize: 1 << 20, writeBufferSize: 8 << 20, bloomBits: 10}
			s := newSession(eng.open, filepath.Join(t.TempDir(), eng.name), testYCSBConfig(records), ecfg)
			defer s.close()
			checkYCSBRuns(t, s, records)
			if err := s.close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestYCSBFlagsChecked checks that main refuses YCSB sizes go-ycsb's client
// would exit the process on.
func TestYCSBFlagsChecked(t *testing.T) {
	for _, args := range [][]string{
		{"--ycsb_records", "1"},
		{"--ycsb_ops", "1"},
		{"--ycsb_fields", "0"},
		{"--ycsb_records", "3", "--threads", "4"},
	} {
		err := mainErr(append(args, "--benchmarks", "ycsb_a"), new(strings.Builder), new(strings.Builder))
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("mainErr(%q): %v, want an error naming %s", args, err, args[0])
		}
	}
}

// TestEnginesTakeConcurrentPuts checks the engine contract the YCSB threads
// rely on: puts from several goroutines at once, beside a reader, all kept.
func TestEnginesTakeConcurrentPuts(t *testing.T) {
	for _, eng := range engineOpeners {
		t.Run(eng.name, func(t *testing.T) {
			const writers, keys = 2, 1000
			ecfg := engineConfig{cacheSize: 1 << 20, writeBufferSize: 8 << 20, bloomBits: 10}
			e, err := eng.open(filepath.Join(t.TempDir(), eng.name), ecfg)
			if err != nil {
				t.Fatal(err)
			}
			defer e.close()
			var wg sync.WaitGroup
			errs := make([]error, writers+1)
			for w := range writers {
				wg.Go(func() {
					for i := range keys {
						if err := e.put(fmt.Appendf(nil, "w%d-%04d", w, i), []byte("value")); err != nil {
							errs[w] = err
							return
						}
					}
				})
			}
			wg.Go(func() {
				rd := e.newReader()
				for i := range keys {
					if _, err := rd.get(fmt.Appendf(nil, "w0-%04d", i)); err != nil {
						errs[writers] = err
						return
					}
				}
			})
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			if err := e.flush(); err != nil {
				t.Fatal(err)
			}
			it, err := e.newIter()
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for ok := it.seekGE(nil); ok; ok = it.next() {
				if v, err := it.value(); err != nil || string(v) != "value" {
					t.Fatalf("key %q: value %q %v", it.key(), v, err)
				}
				n++
			}
			if err := it.close(); err != nil || n != writers*keys {
				t.Fatalf("iterated %d keys (%v), want %d", n, err, writers*keys)
			}
		})
	}
}
