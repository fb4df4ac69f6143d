package shale

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// overlayModel is what a transaction (or indexed batch over a DB) should
// read: the DB's keys with the batch's writes applied, merges by
// joinOperator's rule.
type overlayModel map[string]string

func (m overlayModel) clone() overlayModel {
	c := make(overlayModel, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (m overlayModel) merge(k, op string) {
	if v, ok := m[k]; ok {
		m[k] = v + "+" + op
	} else {
		m[k] = op
	}
}

func (m overlayModel) deleteRange(start, end string) {
	for k := range m {
		if k >= start && k < end {
			delete(m, k)
		}
	}
}

// keysIn returns m's keys in [lower, upper) ("" for no bound), sorted.
func (m overlayModel) keysIn(lower, upper string) []string {
	var ks []string
	for k := range m {
		if (lower == "" || k >= lower) && (upper == "" || k < upper) {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

func txnModelKey(rng *rand.Rand) string { return fmt.Sprintf("k%02d", rng.IntN(40)) }

// checkIteratorAgainstModel makes random moves with it (over [lower,
// upper)) and compares each position with m.
func checkIteratorAgainstModel(t *testing.T, rng *rand.Rand, it *Iterator, m overlayModel, lower, upper string, moves int, what string) {
	t.Helper()
	keys := m.keysIn(lower, upper)
	pos := -1 // model position; -1 or len(keys): not valid
	valid := false
	var trace []string
	for range moves {
		var ok bool
		switch op := rng.IntN(9); op {
		case 0:
			ok = it.First()
			pos = 0
			trace = append(trace, "First")
		case 1:
			ok = it.Last()
			pos = len(keys) - 1
			trace = append(trace, "Last")
		case 2:
			k := txnModelKey(rng)
			ok = it.Seek([]byte(k))
			pos, _ = slices.BinarySearch(keys, k)
			trace = append(trace, "Seek("+k+")")
		case 3:
			k := txnModelKey(rng)
			ok = it.SeekForPrev([]byte(k))
			i, found := slices.BinarySearch(keys, k)
			if !found {
				i--
			}
			pos = i
			trace = append(trace, "SeekForPrev("+k+")")
		case 4:
			k := txnModelKey(rng)
			ok = it.SeekLT([]byte(k))
			i, _ := slices.BinarySearch(keys, k)
			pos = i - 1
			trace = append(trace, "SeekLT("+k+")")
		case 5, 6:
			if !valid {
				continue
			}
			ok = it.Next()
			pos++
			trace = append(trace, "Next")
		default:
			if !valid {
				continue
			}
			ok = it.Prev()
			pos--
			trace = append(trace, "Prev")
		}
		want := pos >= 0 && pos < len(keys)
		if ok != want || it.Valid() != want {
			t.Fatalf("%s: after %s: valid %v (Valid %v), model %v (err %v); model keys %q", what, strings.Join(trace, " "), ok, it.Valid(), want, it.Err(), keys)
		}
		valid = want
		if !want {
			continue
		}
		if k, v := string(it.Key()), string(it.Value()); k != keys[pos] || v != m[keys[pos]] {
			t.Fatalf("%s: after %s: at %q=%q, model %q=%q", what, strings.Join(trace, " "), k, v, keys[pos], m[keys[pos]])
		}
	}
	if err := it.Err(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// checkReadsAgainstModel compares Gets of every key of the key space and
// a few iterators with random bounds against m.
func checkReadsAgainstModel(t *testing.T, rng *rand.Rand, get func(k string) ([]byte, error), newIter func(ro *ReadOptions) *Iterator, m overlayModel, what string) {
	t.Helper()
	for i := range 40 {
		k := fmt.Sprintf("k%02d", i)
		v, err := get(k)
		want, ok := m[k]
		switch {
		case ok && (err != nil || string(v) != want):
			t.Fatalf("%s: Get(%q) = %q, %v; model %q", what, k, v, err, want)
		case !ok && !errors.Is(err, ErrNotFound):
			t.Fatalf("%s: Get(%q) = %q, %v; model: not found", what, k, v, err)
		}
	}
	for range 2 {
		var lower, upper string
		if rng.IntN(2) == 0 {
			lower = txnModelKey(rng)
		}
		if rng.IntN(2) == 0 {
			upper = txnModelKey(rng)
		}
		ro := &ReadOptions{}
		if lower != "" {
			ro.LowerBound = []byte(lower)
		}
		if upper != "" {
			ro.UpperBound = []byte(upper)
		}
		it := newIter(ro)
		checkIteratorAgainstModel(t, rng, it, m, lower, upper, 40, what+fmt.Sprintf(" [%q,%q)", lower, upper))
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTransactionReadsOwnWritesModel runs random writes inside
// transactions (both kinds) over a DB whose data sits in memtables and
// tables, and compares every Get and iterator move (both directions, with
// bounds, seeks) with a model overlay: puts, deletes, merges and range
// deletes of the transaction over the DB, save points rolled back, and
// what the DB holds after Commit or Rollback.
func TestTransactionReadsOwnWritesModel(t *testing.T) {
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	if stress() {
		seeds = 60
	}
	for seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			opts := testOptions(vfs.NewMem())
			opts.MergeOperator = joinOperator{}
			opts.Logger = discardLogger()
			tdb, err := OpenTransactionDB("/db", opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tdb.Close()
			db := tdb.DB
			dbModel := overlayModel{}
			for round := range 12 {
				// Some DB writes, spread over memtables and tables.
				for range 60 {
					k := txnModelKey(rng)
					switch rng.IntN(10) {
					case 0, 1:
						must(t, db.Delete([]byte(k), nil))
						delete(dbModel, k)
					case 2:
						k2 := txnModelKey(rng)
						if k < k2 {
							must(t, db.DeleteRange([]byte(k), []byte(k2), nil))
							dbModel.deleteRange(k, k2)
						}
					case 3:
						op := fmt.Sprintf("m%d", rng.IntN(100))
						must(t, db.Merge([]byte(k), []byte(op), nil))
						dbModel.merge(k, op)
					default:
						v := fmt.Sprintf("v%d.%d", round, rng.IntN(1000))
						must(t, db.Put([]byte(k), []byte(v), nil))
						dbModel[k] = v
					}
				}
				if rng.IntN(2) == 0 {
					must(t, db.Flush())
				}
				var txn *Transaction
				kind := "optimistic"
				if round%2 == 0 {
					txn = db.BeginOptimisticTransaction(nil, nil)
				} else {
					kind = "pessimistic"
					txn = tdb.BeginTransaction(nil, nil)
				}
				m := dbModel.clone()
				var saved []overlayModel
				what := fmt.Sprintf("round %d (%s)", round, kind)
				for step := range 80 {
					k := txnModelKey(rng)
					switch rng.IntN(16) {
					case 0, 1:
						must(t, txn.Delete([]byte(k)))
						delete(m, k)
					case 2:
						k2 := txnModelKey(rng)
						if k < k2 {
							must(t, txn.DeleteRange([]byte(k), []byte(k2)))
							m.deleteRange(k, k2)
						}
					case 3, 4:
						op := fmt.Sprintf("t%d", rng.IntN(100))
						must(t, txn.Merge([]byte(k), []byte(op)))
						m.merge(k, op)
					case 5:
						txn.SetSavePoint()
						saved = append(saved, m.clone())
					case 6:
						err := txn.RollbackToSavePoint()
						if len(saved) == 0 {
							if !errors.Is(err, ErrNotFound) {
								t.Fatalf("%s: RollbackToSavePoint without a save point: %v", what, err)
							}
							break
						}
						must(t, err)
						m, saved = saved[len(saved)-1], saved[:len(saved)-1]
					case 7:
						// The DB's data moves; what the transaction reads
						// does not change.
						if rng.IntN(4) == 0 {
							must(t, db.Flush())
						}
					case 8:
						checkReadsAgainstModel(t, rng, func(k string) ([]byte, error) { return txn.Get(nil, []byte(k)) },
							txn.NewIterator, m, fmt.Sprintf("%s step %d", what, step))
					default:
						v := fmt.Sprintf("x%d.%d", round, step)
						must(t, txn.Put([]byte(k), []byte(v)))
						m[k] = v
					}
				}
				checkReadsAgainstModel(t, rng, func(k string) ([]byte, error) { return txn.Get(nil, []byte(k)) },
					txn.NewIterator, m, what+" end")
				if rng.IntN(3) == 0 {
					must(t, txn.Rollback())
				} else {
					must(t, txn.Commit())
					dbModel = m
				}
				checkReadsAgainstModel(t, rng, func(k string) ([]byte, error) { return db.Get([]byte(k), nil) },
					db.NewIterator, dbModel, what+" after commit")
			}
		})
	}
}

// TestWriteBatchWithIndexOverSnapshot reads an indexed batch over a DB
// snapshot with GetFromBatchAndDB and NewIteratorWithBase: the batch's
// writes over the snapshot, not over later DB writes; GetFromBatch alone.
func TestWriteBatchWithIndexOverSnapshot(t *testing.T) {
	opts := testOptions(vfs.NewMem())
	opts.MergeOperator = joinOperator{}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"a", "b", "c", "d"} {
		must(t, db.Put([]byte(k), []byte("db-"+k), nil))
	}
	snap := db.NewSnapshot()
	defer snap.Release()
	must(t, db.Put([]byte("b"), []byte("later"), nil))
	must(t, db.Put([]byte("e"), []byte("later"), nil))

	wb := NewWriteBatchWithIndex()
	wb.Put([]byte("a"), []byte("wb-a"))
	wb.Merge([]byte("b"), []byte("op"))
	must(t, wb.DeleteRange([]byte("c"), []byte("d")))
	wb.Merge([]byte("z"), []byte("only"))
	ro := &ReadOptions{Snapshot: snap}
	want := map[string]string{"a": "wb-a", "b": "db-b+op", "d": "db-d", "z": "only"}
	m := overlayModel(want)
	rng := rand.New(rand.NewPCG(1, 2))
	checkReadsAgainstModel(t, rng, func(k string) ([]byte, error) { return wb.GetFromBatchAndDB(db, ro, []byte(k)) },
		func(o *ReadOptions) *Iterator {
			o.Snapshot = snap
			return wb.NewIteratorWithBase(db.NewIterator(o))
		}, m, "over snapshot")
	if v, err := wb.GetFromBatch([]byte("a")); err != nil || string(v) != "wb-a" {
		t.Fatalf("GetFromBatch(a) = %q, %v", v, err)
	}
	if _, err := wb.GetFromBatch([]byte("c")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetFromBatch(c) = %v, want ErrNotFound", err)
	}
	if _, err := wb.GetFromBatch([]byte("b")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("GetFromBatch(b), merges only: %v, want ErrInvalidArgument", err)
	}
	if it := wb.NewIteratorWithBase(nil); it.First() || !errors.Is(it.Err(), ErrInvalidArgument) {
		t.Fatalf("NewIteratorWithBase(nil): %v", it.Err())
	}
	nested := wb.NewIteratorWithBase(wb.NewIteratorWithBase(db.NewIterator(nil)))
	if nested.First() || !errors.Is(nested.Err(), ErrInvalidArgument) {
		t.Fatalf("NewIteratorWithBase over a batch iterator: %v", nested.Err())
	}
	nested.Close()
	if err := wb.DeleteRange([]byte("q"), []byte("p")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("DeleteRange(q, p) = %v", err)
	}
	// Written, the batch is one atomic write with the same outcome.
	must(t, db.Write(wb.Batch(), nil))
	for k, v := range map[string]string{"a": "wb-a", "b": "later+op", "z": "only"} {
		if got, err := db.Get([]byte(k), nil); err != nil || string(got) != v {
			t.Fatalf("after Write: Get(%q) = %q, %v; want %q", k, got, err, v)
		}
	}
	if _, err := db.Get([]byte("c"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after Write: c not deleted: %v", err)
	}
}

// TestWriteBatchWithIndexPrefixSeek: in prefix mode a seek confines the
// batch's keys to the seek key's prefix, as it confines the DB's, in both
// directions.
func TestWriteBatchWithIndexPrefixSeek(t *testing.T) {
	opts := testOptions(vfs.NewMem())
	opts.PrefixExtractor = NewFixedPrefixTransform(2)
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"aa1", "aa2", "ab1", "zz"} {
		must(t, db.Put([]byte(k), []byte("db"), nil))
	}
	wb := NewWriteBatchWithIndex()
	wb.Put([]byte("aa3"), []byte("wb"))
	wb.Put([]byte("ab0"), []byte("wb"))
	wb.Put([]byte("a"), []byte("wb")) // outside the extractor's domain
	wb.Delete([]byte("aa2"))
	it := wb.NewIteratorWithBase(db.NewIterator(&ReadOptions{PrefixSameAsStart: true}))
	defer it.Close()
	collect := func(ok bool, step func() bool) string {
		var out []string
		for ; ok; ok = step() {
			out = append(out, string(it.Key()))
		}
		return strings.Join(out, ",")
	}
	if got := collect(it.Seek([]byte("aa")), it.Next); got != "aa1,aa3" {
		t.Fatalf("Seek(aa) forward: %s, want aa1,aa3", got)
	}
	if got := collect(it.SeekForPrev([]byte("aa9")), it.Prev); got != "aa3,aa1" {
		t.Fatalf("SeekForPrev(aa9) backward: %s, want aa3,aa1", got)
	}
	if got := collect(it.Seek([]byte("ab")), it.Next); got != "ab0,ab1" {
		t.Fatalf("Seek(ab) forward: %s, want ab0,ab1", got)
	}
	if got := collect(it.Seek([]byte("a")), it.Next); got == "" || !strings.HasPrefix(got, "a,aa1,aa3") {
		t.Fatalf("Seek(a), outside the domain (total order): %s", got)
	}
}
