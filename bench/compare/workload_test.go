package main

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// mapEngine is a reference engine: a map and a sorted key list.
type mapEngine struct {
	m       map[string]bool
	flushes int
}

func openMap(string, engineConfig) (engine, error) { return &mapEngine{m: map[string]bool{}}, nil }

func (e *mapEngine) name() string               { return "map" }
func (e *mapEngine) put(k, _ []byte) error      { e.m[string(k)] = true; return nil }
func (e *mapEngine) delete(k []byte) error      { delete(e.m, string(k)); return nil }
func (e *mapEngine) compactAll() error          { return nil }
func (e *mapEngine) get(k []byte) (bool, error) { return e.m[string(k)], nil }
func (e *mapEngine) flush() error               { e.flushes++; return nil }
func (e *mapEngine) close() error               { return nil }
func (e *mapEngine) shape() string              { return "map" }
func (e *mapEngine) newIter() (engineIter, error) {
	keys := make([]string, 0, len(e.m))
	for k := range e.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return &mapIter{keys: keys}, nil
}

type mapIter struct {
	keys []string
	pos  int
}

func (i *mapIter) seekGE(k []byte) bool {
	i.pos, _ = slices.BinarySearch(i.keys, string(k))
	return i.pos < len(i.keys)
}
func (i *mapIter) next() bool   { i.pos++; return i.pos < len(i.keys) }
func (i *mapIter) key() []byte  { return []byte(i.keys[i.pos]) }
func (i *mapIter) close() error { return nil }

func TestWorkloadsAgainstMap(t *testing.T) {
	cfg := workloadConfig{num: 500, keySize: 16, valueSize: 100, seed: 3}
	s := newSession(openMap, filepath.Join(t.TempDir(), "db"), cfg, engineConfig{})
	r, err := s.run("fillseq")
	if err != nil || r.ops != 500 || len(s.eng.(*mapEngine).m) != 500 {
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
	distinct := int64(len(s.eng.(*mapEngine).m))
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
	printTable(&out, []string{"fillseq"}, []result{{ops: 100, elapsed: 1e9}}, []result{{ops: 50, elapsed: 1e9}})
	if !strings.Contains(out.String(), "fillseq") || !strings.Contains(out.String(), " 2.00\n") {
		t.Fatalf("table:\n%s", out.String())
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
	if n := len(s.eng.(*mapEngine).m); n != 600 {
		t.Fatalf("deletescan left %d keys, want 600", n)
	}
	var out bytes.Buffer
	printTable(&out, []string{"deletescan"}, []result{r}, []result{r})
	if !strings.Contains(out.String(), "after full compaction") || !strings.Contains(out.String(), "shale ms") {
		t.Fatalf("table:\n%s", out.String())
	}
}
