package memtable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/rangedel"
)

type entry struct {
	key   base.InternalKey
	value []byte
}

// model is the reference: every point entry, kept sorted in internal-key
// order.
type model struct{ entries []entry }

func (mo *model) add(seq base.SeqNum, kind base.Kind, key, value []byte) {
	e := entry{key: base.MakeInternalKey(slices.Clone(key), seq, kind), value: slices.Clone(value)}
	i, _ := slices.BinarySearchFunc(mo.entries, e, func(a, b entry) int {
		return base.InternalCompare(bytes.Compare, a.key, b.key)
	})
	mo.entries = slices.Insert(mo.entries, i, e)
}

// seekGE returns the index of the first entry with user key >= key.
func (mo *model) seekGE(key []byte) int {
	i, _ := slices.BinarySearchFunc(mo.entries, key, func(e entry, k []byte) int {
		if c := bytes.Compare(e.key.UserKey, k); c != 0 {
			return c
		}
		return 1
	})
	return i
}

func (mo *model) get(key []byte, snapshot base.SeqNum) (entry, bool) {
	for i := mo.seekGE(key); i < len(mo.entries) && bytes.Equal(mo.entries[i].key.UserKey, key); i++ {
		if mo.entries[i].key.SeqNum() <= snapshot {
			return mo.entries[i], true
		}
	}
	return entry{}, false
}

func newSeed(t testing.TB) (*rand.Rand, uint64) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 0)), seed
}

func randKey(rng *rand.Rand) []byte {
	// A small key space of varying lengths so that keys repeat and prefix
	// one another.
	n := rng.IntN(60)
	return []byte(strconv.Itoa(n)[:1+rng.IntN(len(strconv.Itoa(n)))] + strconv.Itoa(n))
}

var pointKinds = []base.Kind{base.KindSet, base.KindSet, base.KindDelete, base.KindSingleDelete, base.KindMerge}

// checkIter compares every iterator operation against the model.
func checkIter(t *testing.T, seed uint64, rng *rand.Rand, m *Memtable, mo *model) {
	t.Helper()
	it := m.NewIter()
	defer it.Close()
	at := func(what string, ok bool, i int) {
		t.Helper()
		want := i >= 0 && i < len(mo.entries)
		if ok != want {
			t.Fatalf("seed %d: %s: positioned=%v, want %v (model index %d of %d)", seed, what, ok, want, i, len(mo.entries))
		}
		if !ok {
			if it.Key().UserKey != nil || it.Value() != nil {
				t.Fatalf("seed %d: %s: unpositioned iterator has key %s", seed, what, it.Key())
			}
			return
		}
		e := mo.entries[i]
		if base.InternalCompare(bytes.Compare, it.Key(), e.key) != 0 || !bytes.Equal(it.Value(), e.value) {
			t.Fatalf("seed %d: %s: at %s=%q, want %s=%q", seed, what, it.Key(), it.Value(), e.key, e.value)
		}
	}
	// Full scans both ways.
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		at("scan forward", true, i)
		i++
	}
	at("end of forward scan", false, i)
	if it.Next() {
		t.Fatalf("seed %d: Next after exhaustion", seed)
	}
	i = len(mo.entries) - 1
	for ok := it.Last(); ok; ok = it.Prev() {
		at("scan backward", true, i)
		i--
	}
	at("end of backward scan", false, i)
	// Random seeks followed by random steps.
	for range 50 {
		key := randKey(rng)
		var i int
		var ok bool
		var what string
		switch rng.IntN(4) {
		case 0:
			ok, i, what = it.SeekGE(key), mo.seekGE(key), fmt.Sprintf("SeekGE(%s)", key)
		case 1:
			ok, i, what = it.SeekLT(key), mo.seekGE(key)-1, fmt.Sprintf("SeekLT(%s)", key)
		case 2:
			ok, i, what = it.First(), 0, "First"
		case 3:
			ok, i, what = it.Last(), len(mo.entries)-1, "Last"
		}
		at(what, ok, i)
		for range rng.IntN(8) {
			if !ok {
				break
			}
			if rng.IntN(2) == 0 {
				ok, i, what = it.Next(), i+1, what+".Next"
			} else {
				ok, i, what = it.Prev(), i-1, what+".Prev"
			}
			at(what, ok, i)
		}
	}
}

func checkGet(t *testing.T, seed uint64, rng *rand.Rand, m *Memtable, mo *model, maxSeq base.SeqNum) {
	t.Helper()
	for range 200 {
		key := randKey(rng)
		snap := base.SeqNum(rng.IntN(int(maxSeq) + 2))
		if rng.IntN(10) == 0 {
			snap = base.SeqNumMax
		}
		v, kind, seq, found := m.Get(key, snap)
		e, want := mo.get(key, snap)
		if found != want || (found && (!bytes.Equal(v, e.value) || kind != e.key.Kind() || seq != e.key.SeqNum())) {
			t.Fatalf("seed %d: Get(%s, %d) = %q %s #%d %v, want %s=%q %v", seed, key, snap, v, kind, seq, found, e.key, e.value, want)
		}
	}
}

func TestModel(t *testing.T) {
	rng, seed := newSeed(t)
	m := New(base.DefaultComparer, 1<<20)
	mo := &model{}
	if !m.Empty() || m.Count() != 0 {
		t.Fatal("new memtable not empty")
	}
	checkIter(t, seed, rng, m, mo)
	// Seqnums are unique but added out of order, as a pipelined commit may.
	const n = 1500
	seqs := rng.Perm(n)
	for i, s := range seqs {
		seq := base.SeqNum(s + 1)
		key := randKey(rng)
		value := fmt.Appendf(nil, "v%d-%s", seq, bytes.Repeat([]byte("x"), rng.IntN(20)))
		kind := pointKinds[rng.IntN(len(pointKinds))]
		if err := m.Add(seq, kind, key, value); err != nil {
			t.Fatalf("seed %d: Add: %v", seed, err)
		}
		mo.add(seq, kind, key, value)
		if i%300 == 0 || i == n-1 {
			checkIter(t, seed, rng, m, mo)
			checkGet(t, seed, rng, m, mo, n)
		}
	}
	if m.Empty() || m.Count() != n {
		t.Fatalf("Count = %d, want %d", m.Count(), n)
	}
	if !m.RangeTombstones().Empty() {
		t.Fatal("range tombstones without any range delete")
	}
}

// TestNewOnRecycledArena fills a memtable, then builds a second one on its
// arena (after scribbling over it, as a recycled arena holds any bytes) and
// checks the second against its own model: nothing of the first shows.
func TestNewOnRecycledArena(t *testing.T) {
	rng, seed := newSeed(t)
	first := New(base.DefaultComparer, 1<<20)
	for i := range 3000 {
		key := randKey(rng)
		if err := first.Add(base.SeqNum(i+1), base.KindSet, key, key); errors.Is(err, ErrArenaFull) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	for _, fill := range []byte{0, 0xff, 0x5a} {
		arena := first.Arena()
		if len(arena) != ArenaWords(1<<20) {
			t.Fatalf("Arena has %d words, want %d", len(arena), ArenaWords(1<<20))
		}
		if fill != 0 {
			b := unsafe.Slice((*byte)(unsafe.Pointer(&arena[0])), 8*len(arena))
			for i := range b {
				b[i] = fill
			}
		}
		m := NewOnArena(base.DefaultComparer, arena)
		mo := &model{}
		if !m.Empty() || !m.RangeTombstones().Empty() {
			t.Fatal("memtable on a recycled arena is not empty")
		}
		checkIter(t, seed, rng, m, mo)
		for i := range 1000 {
			seq := base.SeqNum(i + 1)
			key := randKey(rng)
			kind := pointKinds[rng.IntN(len(pointKinds))]
			if err := m.Add(seq, kind, key, key); err != nil {
				t.Fatal(err)
			}
			mo.add(seq, kind, key, key)
		}
		if err := m.Add(1001, base.KindRangeDelete, []byte("a"), []byte("b")); err != nil {
			t.Fatal(err)
		}
		if got := m.RangeTombstones().Spans(); len(got) != 1 {
			t.Fatalf("fill %#x: range tombstones %v, want the one added", fill, got)
		}
		checkIter(t, seed, rng, m, mo)
		checkGet(t, seed, rng, m, mo, 1000)
		first = m
	}
}

func TestEmptyKeysAndValues(t *testing.T) {
	m := New(nil, 4096)
	mo := &model{}
	for i, kv := range [][2]string{{"", ""}, {"", "v"}, {"a", ""}} {
		seq := base.SeqNum(i + 1)
		if err := m.Add(seq, base.KindSet, []byte(kv[0]), []byte(kv[1])); err != nil {
			t.Fatal(err)
		}
		mo.add(seq, base.KindSet, []byte(kv[0]), []byte(kv[1]))
	}
	rng, seed := newSeed(t)
	checkIter(t, seed, rng, m, mo)
	if v, _, seq, ok := m.Get(nil, 1); !ok || seq != 1 || len(v) != 0 {
		t.Fatalf("Get(empty key, 1) = %q #%d %v", v, seq, ok)
	}
}

func TestRangeTombstones(t *testing.T) {
	rng, seed := newSeed(t)
	m := New(base.DefaultComparer, 1<<20)
	mo := &model{}
	var ts []rangedel.Tombstone
	prev := m.RangeTombstones()
	for i := range 400 {
		seq := base.SeqNum(i + 1)
		if rng.IntN(3) == 0 {
			start, end := randKey(rng), randKey(rng)
			if err := m.Add(seq, base.KindRangeDelete, start, end); err != nil {
				t.Fatal(err)
			}
			ts = append(ts, rangedel.Tombstone{Start: start, End: end, Seq: seq})
			l := m.RangeTombstones()
			want := rangedel.Fragment(bytes.Compare, ts)
			if fmt.Sprint(l.Spans()) != fmt.Sprint(want) {
				t.Fatalf("seed %d: RangeTombstones = %v, want %v", seed, l.Spans(), want)
			}
			if l == prev && len(want) > 0 {
				t.Fatalf("seed %d: cached list not rebuilt after a range delete", seed)
			}
			prev = l
		} else {
			key := randKey(rng)
			if err := m.Add(seq, base.KindSet, key, key); err != nil {
				t.Fatal(err)
			}
			mo.add(seq, base.KindSet, key, key)
			if l := m.RangeTombstones(); l != prev {
				t.Fatalf("seed %d: range tombstones rebuilt without a new range delete", seed)
			}
		}
	}
	if m.Count() != len(ts)+len(mo.entries) {
		t.Fatalf("Count = %d, want %d", m.Count(), len(ts)+len(mo.entries))
	}
	// Point reads never see range deletes.
	checkIter(t, seed, rng, m, mo)
	checkGet(t, seed, rng, m, mo, 400)
}

func TestArenaFull(t *testing.T) {
	rng, seed := newSeed(t)
	m := New(base.DefaultComparer, 8<<10)
	mo := &model{}
	seq := base.SeqNum(1)
	full := 0
	for full < 20 {
		key := randKey(rng)
		value := bytes.Repeat([]byte{'v'}, rng.IntN(100))
		kind := base.KindSet
		if rng.IntN(5) == 0 {
			kind = base.KindRangeDelete
		}
		used, count, rd := m.ApproximateMemoryUsage(), m.Count(), m.RangeTombstones()
		err := m.Add(seq, kind, key, value)
		if errors.Is(err, ErrArenaFull) {
			full++
			if m.ApproximateMemoryUsage() != used || m.Count() != count || m.RangeTombstones() != rd {
				t.Fatalf("seed %d: failed Add changed the memtable", seed)
			}
			if left := m.Capacity() - used; left >= EntrySizeBound(len(key), len(value)) {
				t.Fatalf("seed %d: ErrArenaFull with %d bytes left for a %d-byte bound", seed, left, EntrySizeBound(len(key), len(value)))
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.ApproximateMemoryUsage() > m.Capacity() || m.ApproximateMemoryUsage()-used > EntrySizeBound(len(key), len(value)) {
			t.Fatalf("seed %d: usage %d of %d after an entry bounded by %d", seed, m.ApproximateMemoryUsage(), m.Capacity(), EntrySizeBound(len(key), len(value)))
		}
		if kind != base.KindRangeDelete {
			mo.add(seq, kind, key, value)
		}
		seq++
	}
	if err := m.Add(seq, base.KindSet, []byte("k"), make([]byte, 1<<20)); !errors.Is(err, ErrArenaFull) {
		t.Fatalf("oversized entry: %v", err)
	}
	checkIter(t, seed, rng, m, mo)
	checkGet(t, seed, rng, m, mo, seq)

	// An entry within the bound always fits an empty memtable sized for it.
	for range 100 {
		k, v := make([]byte, rng.IntN(50)), make([]byte, rng.IntN(50))
		m := New(nil, minCapacity+EntrySizeBound(len(k), len(v)))
		if err := m.Add(1, base.KindSet, k, v); err != nil {
			t.Fatalf("entry within EntrySizeBound: %v", err)
		}
	}
}

func TestNoAllocs(t *testing.T) {
	m := New(base.DefaultComparer, 64<<20)
	key, value := make([]byte, 16), make([]byte, 32)
	seq := base.SeqNum(1)
	allocs := testing.AllocsPerRun(1000, func() {
		copy(key, strconv.AppendUint(key[:0], uint64(seq)*2654435761%1000003, 10))
		if err := m.Add(seq, base.KindSet, key, value); err != nil {
			t.Fatal(err)
		}
		seq++
	})
	if allocs != 0 {
		t.Errorf("Add: %v allocs per op", allocs)
	}
	var found bool
	allocs = testing.AllocsPerRun(1000, func() { _, _, _, found = m.Get(key, base.SeqNumMax) })
	if allocs != 0 || !found {
		t.Errorf("Get: %v allocs per op, found %v", allocs, found)
	}
	it := m.NewIter()
	allocs = testing.AllocsPerRun(100, func() { it.SeekGE(key); it.Next(); it.Prev() })
	if allocs != 0 {
		t.Errorf("iterator: %v allocs per op", allocs)
	}
}

// concurrentValue derives an entry's value from its key and seqnum so that
// readers can tell a whole entry from a half-written one.
func concurrentValue(key []byte, seq base.SeqNum) []byte {
	return fmt.Appendf(nil, "%s@%d", key, seq)
}

func TestConcurrentReaders(t *testing.T) {
	rng, seed := newSeed(t)
	n := 20000
	if os.Getenv("SHALE_STRESS") == "1" {
		n = 1000000
	}
	m := New(base.DefaultComparer, 64<<20)
	var done atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	check := func(prev, cur base.InternalKey, v []byte, forward bool) error {
		if !bytes.Equal(v, concurrentValue(cur.UserKey, cur.SeqNum())) {
			return fmt.Errorf("entry %s has value %q", cur, v)
		}
		if prev.UserKey != nil {
			c := base.InternalCompare(bytes.Compare, prev, cur)
			if (forward && c >= 0) || (!forward && c <= 0) {
				return fmt.Errorf("out of order (forward=%v): %s then %s", forward, prev, cur)
			}
		}
		return nil
	}
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			it := m.NewIter()
			defer it.Close()
			for pass := 0; !done.Load() || pass < 2; pass++ {
				var prev base.InternalKey
				var err error
				switch (r + pass) % 3 {
				case 0:
					// A scan sees at least what was added before it began.
					before, seen := m.Count(), 0
					for ok := it.First(); ok && err == nil; ok = it.Next() {
						err = check(prev, it.Key(), it.Value(), true)
						prev = it.Key().Clone()
						seen++
					}
					if err == nil && seen < before {
						err = fmt.Errorf("forward scan saw %d entries, %d were added before it began", seen, before)
					}
				case 1:
					for ok, steps := it.Last(), 0; ok && err == nil && steps < 200; ok, steps = it.Prev(), steps+1 {
						err = check(prev, it.Key(), it.Value(), false)
						prev = it.Key().Clone()
					}
				case 2:
					key := []byte(strconv.Itoa(pass % 1000))
					for ok, steps := it.SeekGE(key), 0; ok && err == nil && steps < 50; ok, steps = it.Next(), steps+1 {
						if steps == 0 && bytes.Compare(it.Key().UserKey, key) < 0 {
							err = fmt.Errorf("SeekGE(%s) landed on %s", key, it.Key())
						}
						err = errors.Join(err, check(prev, it.Key(), it.Value(), true))
						prev = it.Key().Clone()
					}
					if v, _, seq, ok := m.Get(key, base.SeqNumMax); ok && err == nil {
						err = check(base.InternalKey{}, base.MakeInternalKey(key, seq, 0), v, true)
					}
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	for i := range n {
		key := []byte(strconv.Itoa(rng.IntN(1000)))
		seq := base.SeqNum(i + 1)
		if err := m.Add(seq, base.KindSet, key, concurrentValue(key, seq)); err != nil {
			t.Fatal(err)
		}
	}
	done.Store(true)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Errorf("seed %d: reader: %v", seed, err)
	}
	if m.Count() != n {
		t.Fatalf("Count = %d, want %d", m.Count(), n)
	}
}

func BenchmarkAdd(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key%012d", rng.Uint64())
	}
	value := make([]byte, 64)
	m := New(base.DefaultComparer, 256<<20)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := m.Add(base.SeqNum(i+1), base.KindSet, keys[i&(len(keys)-1)], value); err != nil {
			b.StopTimer()
			m = New(base.DefaultComparer, 256<<20)
			b.StartTimer()
		}
	}
}

func BenchmarkGet(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, 1<<16)
	m := New(base.DefaultComparer, 64<<20)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key%012d", rng.Uint64())
		if err := m.Add(base.SeqNum(i+1), base.KindSet, keys[i], keys[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, _, ok := m.Get(keys[i&(len(keys)-1)], base.SeqNumMax); !ok {
			b.Fatal("not found")
		}
	}
}

// BenchmarkAddLarge is the insert of db_bench's fillrandom into a memtable
// that no longer fits the CPU caches: 16-byte decimal keys (their first
// bytes the same, as db_bench's) and 100-byte values, into a list that
// already holds 300k entries. Run it with a bounded count
// (-benchtime=200000x): the arena holds about 1.5M entries.
func BenchmarkAddLarge(b *testing.B) {
	const prefill = 300000
	rng := rand.New(rand.NewPCG(5, 6))
	key := make([]byte, 16)
	value := make([]byte, 100)
	m := New(base.DefaultComparer, 256<<20)
	seq := base.SeqNum(1)
	fill := func() {
		for range prefill {
			b := fmt.Appendf(key[:0], "%016d", rng.Int64N(1e9))
			if err := m.Add(seq, base.KindSet, b, value); err != nil {
				panic(err)
			}
			seq++
		}
	}
	fill()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		k := fmt.Appendf(key[:0], "%016d", rng.Int64N(1e9))
		if err := m.Add(seq, base.KindSet, k, value); err != nil {
			b.StopTimer()
			m = New(base.DefaultComparer, 256<<20)
			fill()
			b.StartTimer()
		}
		seq++
	}
}
