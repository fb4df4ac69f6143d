package vfs

import (
	"errors"
	"testing"
)

// TestFaultFSNthCountsEveryMatch: "the Nth sync" is the Nth sync the rule's
// filters match, whether or not another rule failed an earlier one. Before,
// a rule stopped counting the operations an earlier rule failed, so a sync
// failed by one rule shifted another rule's count by one.
func TestFaultFSNthCountsEveryMatch(t *testing.T) {
	ffs := NewFaultFS(NewMem(), 1)
	f, err := ffs.Create("/000001.log")
	if err != nil {
		t.Fatal(err)
	}
	ffs.AddRule(FaultRule{Op: OpSync, PathPattern: "*.log", Nth: 2})
	ffs.AddRule(FaultRule{Op: OpSync, Nth: 4})
	for i := 1; i <= 6; i++ {
		err := f.Sync()
		if want := i == 2 || i == 4; (err != nil) != want {
			t.Fatalf("sync %d: err %v, want failure %v", i, err, want)
		}
	}
	if got := ffs.Injected(); got != 2 {
		t.Fatalf("Injected = %d, want 2", got)
	}
}

// TestFaultFSProbabilityPerRule: a seeded probabilistic rule fails the same
// calls of its own operation however the operations of other rules are
// interleaved with them. Before, all rules drew from one generator, so
// adding reads between syncs changed which syncs failed.
func TestFaultFSProbabilityPerRule(t *testing.T) {
	run := func(readsBetween int) []bool {
		mem := NewMem()
		mustCreate(t, mem, "/db/MANIFEST-000001")
		ffs := NewFaultFS(mem, 99)
		ffs.AddRule(FaultRule{Op: OpRead, Probability: 0.5})
		ffs.AddRule(FaultRule{Op: OpSync, Probability: 0.5})
		f, err := ffs.OpenReadWrite("/db/MANIFEST-000001")
		if err != nil {
			t.Fatal(err)
		}
		out := make([]bool, 100)
		buf := make([]byte, 4)
		for i := range out {
			for range (i * 7 % 3) * readsBetween {
				f.ReadAt(buf, 0)
			}
			err := f.Sync()
			if err != nil && !errors.Is(err, ErrInjected) {
				t.Fatal(err)
			}
			out[i] = err != nil
		}
		return out
	}
	alone, mixed := run(0), run(1)
	for i := range alone {
		if alone[i] != mixed[i] {
			t.Fatalf("sync %d failed %v without reads in between and %v with them", i+1, alone[i], mixed[i])
		}
	}
}
