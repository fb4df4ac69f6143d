package blob

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// TestWriteFaultsSurface fails the k-th write, the sync, the truncation of
// preallocated space, or the close of a blob file, as an injected error,
// a full disk or a torn write: the failure comes back from Add or Close,
// every later call returns an error, nothing panics, and a file whose
// Close failed before the footer reached it reads as unfinished.
func TestWriteFaultsSurface(t *testing.T) {
	rng := newRand(t)
	// 3.2 MiB that do not compress: a dozen writes of the 256 KiB buffer.
	recs := make([]record, 400)
	for i := range recs {
		v := make([]byte, 8<<10)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		recs[i] = record{[]byte(fmt.Sprint(i)), v}
	}
	var rules []errorfs.Rule
	for k := 1; k <= 6; k++ {
		rules = append(rules,
			errorfs.Rule{Op: errorfs.OpWrite, Nth: k},
			errorfs.Rule{Op: errorfs.OpWrite, Nth: k, NoSpace: true},
			errorfs.Rule{Op: errorfs.OpWrite, Nth: k, ShortWrite: true})
	}
	rules = append(rules, errorfs.Rule{Op: errorfs.OpSync}, errorfs.Rule{Op: errorfs.OpTruncate},
		errorfs.Rule{Op: errorfs.OpWrite, Probability: 0.3})
	for _, rule := range rules {
		name := fmt.Sprintf("%s nth %d nospace %v short %v p %.1f", rule.Op, rule.Nth, rule.NoSpace, rule.ShortWrite, rule.Probability)
		mem := vfs.NewMem()
		// A fixed seed: the probabilistic rule fails the same writes in
		// every run.
		fs := errorfs.New(mem, 7)
		f, err := fs.Create("/f.blob")
		if err != nil {
			t.Fatal(err)
		}
		fs.AddRule(rule)
		w := NewWriter(f, WriterOptions{FileName: "f.blob", TargetFileSize: 1 << 20, Compression: SnappyCompression})
		var failed error
		added := 0
		for _, rc := range recs {
			if _, err := w.Add(rc.key, rc.value); err != nil {
				failed = err
				break
			}
			added++
		}
		if failed != nil {
			if _, err := w.Add([]byte("k"), []byte("v")); err == nil {
				t.Fatalf("%s: Add after a failed Add succeeded", name)
			}
		}
		_, cerr := w.Close()
		if failed == nil {
			failed = cerr
		}
		if fs.Injected() == 0 {
			t.Fatalf("%s: nothing injected (the writer wrote %d records)", name, added)
		}
		if failed == nil {
			t.Fatalf("%s: an injected failure did not surface", name)
		}
		if cerr == nil {
			t.Fatalf("%s: Close succeeded after a failure", name)
		}
		if !errors.Is(failed, errorfs.ErrInjected) && !errors.Is(failed, syscall.ENOSPC) {
			t.Fatalf("%s: %v does not wrap the injected error", name, failed)
		}
		if rule.Op == errorfs.OpWrite {
			// The footer is the last write: a failed write leaves no footer.
			data := readMem(t, mem, "/f.blob")
			if _, err := openBytes(data, ReaderOptions{}); !errors.Is(err, ErrNoFooter) {
				t.Fatalf("%s: the file of a failed writer: %v, want no footer", name, err)
			}
		}
	}
}

// TestReadFaultsSurface fails reads of an open blob file: Get, GetBatch
// (synchronous and async) and the iterator return the error, which is not
// corruption, and reads succeed again once the fault is gone.
func TestReadFaultsSurface(t *testing.T) {
	rng := newRand(t)
	recs := randomRecords(rng, 60)
	mem := vfs.NewMem()
	wf, err := mem.Create("/r.blob")
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(wf, WriterOptions{})
	xs := make([]Index, len(recs))
	for i, rc := range recs {
		if xs[i], err = w.Add(rc.key, rc.value); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fs := errorfs.New(mem, 1)
	f, err := fs.Open("/r.blob")
	if err != nil {
		t.Fatal(err)
	}
	async := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
	defer async.Close()
	r, err := NewReader(f, ReaderOptions{FileName: "r.blob", AsyncReader: async})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	notCorruption := func(what string, err error) {
		t.Helper()
		if err == nil || errors.Is(err, base.ErrCorruption) || !errors.Is(err, errorfs.ErrInjected) {
			t.Fatalf("%s: %v, want the injected error", what, err)
		}
	}
	fs.AddRule(errorfs.Rule{Op: errorfs.OpRead})
	_, err = r.Get(xs[3], recs[3].key)
	notCorruption("Get", err)
	for _, g := range []*ReadGroup{nil, NewReadGroup(async)} {
		b := NewGetBatch(g)
		for i := 0; i < 5; i++ {
			b.Add(r, xs[i], recs[i].key, false)
		}
		b.Submit()
		for i := 0; i < 5; i++ {
			_, err := b.Result(i)
			notCorruption(fmt.Sprintf("batch (group %v) %d", g != nil, i), err)
		}
		b.Reset()
	}
	for _, ra := range []int64{-1, 0, 64 << 10} {
		_, _, err := iterAll(r, IterOptions{ReadaheadSize: ra})
		notCorruption(fmt.Sprintf("iterator readahead %d", ra), err)
	}
	fs.ClearRules()
	if v, err := r.Get(xs[3], recs[3].key); err != nil || !bytes.Equal(v, recs[3].value) {
		t.Fatalf("Get after the fault: %v", err)
	}
	got, _, err := iterAll(r, IterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, recs)
	// A failing read at open is an error too, and closes the file.
	fs.AddRule(errorfs.Rule{Op: errorfs.OpRead})
	f2, err := fs.Open("/r.blob")
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewReader(f2, ReaderOptions{})
	notCorruption("open", err)
}
