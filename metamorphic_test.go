package shale

import (
	"errors"
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"strings"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// TestMetamorphic runs one random operation sequence (writes, batches,
// single and range deletes, Gets, MultiGets, bounded iterators moving both
// ways, snapshots, flushes, compactions, reopens) under every option set of
// metamorphicSets. Each run writes an observation log (every answer, see
// runOp); every log must equal the in-memory model's, and so each other's.
// A failure names the seed, the option sets and the first differing line;
// rerun one set with SHALE_SEED=<seed> go test -run 'TestMetamorphic/<seed>/<set>$'.
func TestMetamorphic(t *testing.T) {
	n := bySize(2000, 600, 8000)
	forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
		runMetamorphic(t, seed, n, metamorphicSets)
	})
}

// TestMetamorphicSecondaryDelete is TestMetamorphic with
// DeleteBySecondaryRange among the operations, under the option sets that
// change how data moves through memtables, levels and tables (each with
// SecondaryDeleteKey set on top): flushes, compactions and reads apply
// secondary tombstones in every shape, and all must answer alike.
func TestMetamorphicSecondaryDelete(t *testing.T) {
	n := bySize(2000, 600, 8000)
	names := map[string]bool{
		"base": true, "tiny-memtable-nocompression": true, "big-blocks-nobloom": true,
		"3-static-levels": true, "7-static-levels": true, "max-open-files-4-nocache": true,
		"async-io-single-level": true, "marks-every-table": true, "max-skip-0": true,
		"delete-persistence-fake-clock": true,
	}
	var sets []metaOptionSet
	for _, s := range metamorphicSets {
		if !names[s.name] {
			continue
		}
		set := s.set
		s.set = func(o *Options) {
			set(o)
			o.SecondaryDeleteKey = modelSecondaryKey
		}
		sets = append(sets, s)
	}
	if len(sets) != len(names) {
		t.Fatalf("found %d of the %d option sets named", len(sets), len(names))
	}
	forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
		g := newOpGenerator(seed, modelKeys)
		g.secondary = true
		runMetamorphicOps(t, seed, generateOpsWith(g, n), sets)
	})
}

// runMetamorphic runs n generated operations (and a final scan, reopen and
// scan) under each set and compares the logs with the model's.
func runMetamorphic(t *testing.T, seed uint64, n int, sets []metaOptionSet) {
	runMetamorphicOps(t, seed, generateOps(seed, n, modelKeys), sets)
}

// runMetamorphicOps is runMetamorphic with the operations given.
func runMetamorphicOps(t *testing.T, seed uint64, ops []modelOp, sets []metaOptionSet) {
	runMetamorphicModel(t, seed, ops, sets, newModelTarget())
}

// runMetamorphicModel is runMetamorphicOps with the model given (one that
// knows the sets' prefix extractor, for iterators in prefix mode).
func runMetamorphicModel(t *testing.T, seed uint64, ops []modelOp, sets []metaOptionSet, m *modelTarget) {
	ops = append(ops,
		modelOp{kind: opIter, steps: []iterStep{{kind: stepScanFwd}}},
		modelOp{kind: opReopen},
		modelOp{kind: opIter, steps: []iterStep{{kind: stepScanRev}}},
	)
	// want is the model's log; wantEnd[i] is its length after op i.
	var want []string
	wantEnd := make([]int, len(ops))
	for i, op := range ops {
		want = runOp(m, op, i, want)
		wantEnd[i] = len(want)
	}
	var matched []string // sets whose log equalled the model's
	for _, set := range sets {
		t.Run(set.name, func(t *testing.T) {
			if runMetaSet(t, seed, set, ops, want, wantEnd, matched) {
				matched = append(matched, set.name)
			}
		})
	}
}

// runMetaSet runs ops under one set, stopping at the first line that
// differs from want; it reports whether the whole log matched.
func runMetaSet(t *testing.T, seed uint64, set metaOptionSet, ops []modelOp, want []string, wantEnd []int, matched []string) bool {
	var fs vfs.FS = vfs.NewMem()
	dir := "/db"
	if set.osFS {
		fs, dir = vfs.Default, testdir.New(t)
	}
	opts := testOptions(fs)
	set.set(opts)
	d, err := openDBTarget(dir, opts, set.cfg)
	if err != nil {
		if set.osFS && errors.Is(err, vfs.ErrDirectIOUnsupported) {
			t.Skipf("%s: the temporary directory's file system refuses direct IO: %v", set.name, err)
		}
		t.Fatalf("%s: Open: %v", set.describe(), err)
	}
	defer func() {
		if err := d.close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("%s: Close: %v", set.name, err)
		}
	}()
	var got []string
	for i, op := range ops {
		start := len(got)
		got = runOp(d, op, i, got)
		if len(got) == wantEnd[i] && firstDifference(got[start:], want[start:wantEnd[i]]) < 0 {
			continue
		}
		j := start + max(0, firstDifference(got[start:], want[start:min(len(want), max(wantEnd[i], start))]))
		var ctx strings.Builder
		for k := max(0, j-5); k < j; k++ {
			fmt.Fprintf(&ctx, "\n    %s", want[k])
		}
		others := "the model"
		if len(matched) > 0 {
			others = "the model and option sets " + strings.Join(matched, ", ")
		}
		t.Fatalf("metamorphic: seed %d, op %d (%s), log line %d differs:\n"+
			"  option set %s\n    logged: %s\n"+
			"  %s logged:\n            %s\n"+
			"  %s\n"+
			"  the lines before it:%s\n"+
			"  rerun: SHALE_SEED=%d go test -run '%s/%d/%s$' .",
			seed, i, op, j, set.describe(), lineAt(got, j), others, lineAt(want, j), lineDiff(lineAt(got, j), lineAt(want, j)), ctx.String(), seed, strings.Split(t.Name(), "/")[0], seed, set.name)
	}
	d.countWork()
	t.Logf("%s: %d log lines equal the model's; %d flushes, %d compactions", set.name, len(got), d.flushes, d.compactions)
	return true
}
