package dbiter

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/itertest"
)

// testMerge writes the merge it is asked for: the base (tagged with its
// kind) or "-" for none, then the operands, oldest first.
func testMerge(key, baseValue []byte, baseKind base.Kind, hasBase bool, ops [][]byte) ([]byte, error) {
	b := []byte("-")
	if hasBase {
		b = append([]byte(baseKind.String()+":"), baseValue...)
	}
	return fmt.Appendf(nil, "M(%s|%s)", b, bytes.Join(ops, []byte(","))), nil
}

// mergeModel returns the visible keys and values at snap within [lower,
// upper), merges resolved as testMerge does.
func (db *testDB) mergeModel(snap base.SeqNum, lower, upper []byte) (keys, vals [][]byte) {
	for i := 0; i < len(db.entries); {
		uk := db.entries[i].Key.UserKey
		var visible []*itertest.Entry // newest first
		for ; i < len(db.entries) && bytes.Equal(db.entries[i].Key.UserKey, uk); i++ {
			e := &db.entries[i]
			if e.Key.SeqNum() <= snap && e.Key.Kind() != base.KindRangeDelete {
				visible = append(visible, e)
			}
		}
		if len(visible) == 0 || (lower != nil && bytes.Compare(uk, lower) < 0) || (upper != nil && bytes.Compare(uk, upper) >= 0) {
			continue
		}
		newest := visible[0]
		if newest.Key.Kind().IsTombstone() || db.tombs.Covers(uk, newest.Key.SeqNum(), snap) {
			continue
		}
		if newest.Key.Kind() != base.KindMerge {
			keys, vals = append(keys, uk), append(vals, newest.Value)
			continue
		}
		var ops [][]byte
		var baseValue []byte
		var baseKind base.Kind
		hasBase := false
	gather:
		for _, e := range visible {
			if db.tombs.Covers(uk, e.Key.SeqNum(), snap) {
				break
			}
			switch e.Key.Kind() {
			case base.KindMerge:
				ops = append([][]byte{e.Value}, ops...)
			case base.KindSet, base.KindBlobIndex:
				baseValue, baseKind, hasBase = e.Value, e.Key.Kind(), true
				break gather
			default:
				break gather
			}
		}
		v, _ := testMerge(uk, baseValue, baseKind, hasBase, ops)
		keys, vals = append(keys, uk), append(vals, v)
	}
	return keys, vals
}

// TestIterMergeRandom runs random operations on iterators with a merge
// operator over random entries (merge operands among them) split across
// children, under every MaxSkip (the backward reseek gathers operands
// forward), against the model.
func TestIterMergeRandom(t *testing.T) {
	merged := 0
	for iter := 0; iter < 300; iter++ {
		seed := itertest.Seed(iter)
		for _, maxSkip := range maxSkips {
			rng := rand.New(rand.NewPCG(seed, 21))
			db := randomDB(rng)
			o := reseekOptions(Options{
				Snapshot: randomSnapshot(rng, db.maxSeq),
				Lower:    randomBound(rng, db.nkeys),
				Upper:    randomBound(rng, db.nkeys),
				Merge:    testMerge,
			}, maxSkip)
			if len(db.tombs) > 0 || rng.IntN(2) == 0 {
				o.RangeDels = db.tombs
			}
			keys, vals := db.mergeModel(o.Snapshot, o.Lower, o.Upper)
			for _, v := range vals {
				if bytes.HasPrefix(v, []byte("M(")) {
					merged++
				}
			}
			m, _ := db.mergedIter(rng, 1+rng.IntN(5))
			it := New(m, o)
			ctx := fmt.Sprintf("seed %d MaxSkip %d (snapshot %d, bounds [%s, %s), tombstones %v)", seed, maxSkip, o.Snapshot, o.Lower, o.Upper, db.tombs)
			runOps(t, ctx, rng, it, keys, vals, db.nkeys, 300)
			if err := it.Close(); err != nil {
				t.Fatalf("%s: close: %v", ctx, err)
			}
		}
	}
	if merged == 0 {
		t.Fatal("no key was merged: the test does not exercise merges")
	}
}

// TestIterMergeScans walks every snapshot forward and backward with a
// merge operator, switching direction at every key.
func TestIterMergeScans(t *testing.T) {
	for iter := 0; iter < 50; iter++ {
		seed := itertest.Seed(iter)
		rng := rand.New(rand.NewPCG(seed, 22))
		db := randomDB(rng)
		for snap := base.SeqNum(0); snap <= db.maxSeq+1; snap++ {
			keys, vals := db.mergeModel(snap, nil, nil)
			var want []string
			for i := range keys {
				want = append(want, string(keys[i])+"="+string(vals[i]))
			}
			m, _ := db.mergedIter(rng, 3)
			it := New(m, Options{Snapshot: snap, RangeDels: db.tombs, Merge: testMerge})
			var got []string
			for ok := it.First(); ok; ok = it.Next() {
				got = append(got, string(it.Key())+"="+string(it.Value()))
				if it.Kind() != base.KindSet && bytes.HasPrefix(it.Value(), []byte("M(")) {
					t.Fatalf("seed %d snap %d: merged key %s has kind %s", seed, snap, it.Key(), it.Kind())
				}
				if it.Prev() {
					if len(got) < 2 || string(it.Key())+"="+string(it.Value()) != got[len(got)-2] {
						t.Fatalf("seed %d snap %d: Prev after %s gave %s", seed, snap, got[len(got)-1], it.Key())
					}
					it.Next()
				} else {
					it.Next()
				}
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("seed %d snap %d: forward\n got %v\nwant %v", seed, snap, got, want)
			}
			got = got[:0]
			for ok := it.Last(); ok; ok = it.Prev() {
				got = append(got, string(it.Key())+"="+string(it.Value()))
			}
			for i, j := 0, len(got)-1; i < j; i, j = i+1, j-1 {
				got[i], got[j] = got[j], got[i]
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("seed %d snap %d: backward\n got %v\nwant %v", seed, snap, got, want)
			}
			it.Close()
		}
	}
}

// TestIterMergeError checks that an operator's error stops iteration and
// is returned.
func TestIterMergeError(t *testing.T) {
	errMerge := errors.New("merge failed")
	entries := []itertest.Entry{
		{Key: base.MakeInternalKey([]byte("a"), 3, base.KindSet), Value: []byte("a")},
		{Key: base.MakeInternalKey([]byte("b"), 2, base.KindMerge), Value: []byte("x")},
		{Key: base.MakeInternalKey([]byte("b"), 1, base.KindSet), Value: []byte("y")},
	}
	for _, backward := range []bool{false, true} {
		it := New(&itertest.SliceIter{Entries: entries}, Options{Snapshot: base.SeqNumMax,
			Merge: func([]byte, []byte, base.Kind, bool, [][]byte) ([]byte, error) { return nil, errMerge }})
		var ok bool
		if backward {
			ok = it.Last()
		} else {
			ok = it.First() && it.Next()
		}
		if ok || !errors.Is(it.Error(), errMerge) {
			t.Fatalf("backward %v: ok %v, error %v; want the merge error", backward, ok, it.Error())
		}
		if err := it.Close(); !errors.Is(err, errMerge) {
			t.Fatalf("backward %v: Close: %v", backward, err)
		}
	}
}
