package cache

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

func TestHitMissAndReplace(t *testing.T) {
	c := New(1 << 20)
	id := c.NewID()
	if id2 := c.NewID(); id2 == id {
		t.Fatalf("NewID returned %d twice", id)
	}
	if _, ok := c.Get(id, 0); ok {
		t.Fatal("empty cache hit")
	}
	c.Set(id, 0, []byte("a"))
	c.Set(id, 4096, []byte("b"))
	if b, ok := c.Get(id, 0); !ok || string(b) != "a" {
		t.Fatalf("Get(0) = %q, %v", b, ok)
	}
	if _, ok := c.Get(id+1, 0); ok {
		t.Fatal("hit in another namespace")
	}
	c.Set(id, 0, []byte("aa"))
	if b, ok := c.Get(id, 0); !ok || string(b) != "aa" {
		t.Fatalf("after replace Get(0) = %q, %v", b, ok)
	}
	m := c.Metrics()
	if m.Hits != 2 || m.Misses != 2 || m.Count != 2 || m.Size != 3+2*entryOverhead || m.Capacity != 1<<20 {
		t.Fatalf("metrics %+v", m)
	}
}

func TestDisabled(t *testing.T) {
	c := New(0)
	c.Set(1, 0, []byte("x"))
	if _, ok := c.Get(1, 0); ok {
		t.Fatal("disabled cache hit")
	}
	if m := c.Metrics(); m.Misses != 1 || m.Count != 0 || m.Size != 0 {
		t.Fatalf("metrics %+v", m)
	}
}

// TestRandomAgainstModel checks the byte bound under random inserts, and
// that every hit returns the block last set for that key.
func TestRandomAgainstModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	const capacity = 256 << 10
	c := New(capacity)
	model := map[key][]byte{}
	ids := []uint64{c.NewID(), c.NewID(), c.NewID()}
	for i := 0; i < 20000; i++ {
		k := key{ids[rng.IntN(len(ids))], uint64(rng.IntN(500)) * 4096}
		switch op := rng.IntN(1000); {
		case op < 3:
			c.EvictID(k.id)
			for mk := range model {
				if mk.id == k.id {
					delete(model, mk)
				}
			}
		case op < 400:
			b := bytes.Repeat([]byte{byte(i)}, rng.IntN(4000))
			c.Set(k.id, k.offset, b)
			model[k] = b
		default:
			b, ok := c.Get(k.id, k.offset)
			if ok && !bytes.Equal(b, model[k]) {
				t.Fatalf("seed %d: Get(%v) returned a stale block", seed, k)
			}
		}
		if m := c.Metrics(); m.Size > capacity {
			t.Fatalf("seed %d: size %d over capacity %d", seed, m.Size, capacity)
		}
	}
	c.Set(ids[0], 1<<40, make([]byte, 100)) // an id-level eviction may just have run
	m := c.Metrics()
	if m.Count < 10 || m.Size < capacity/8 {
		t.Fatalf("seed %d: cache nearly empty after random inserts: %+v", seed, m)
	}
}

func TestEvictID(t *testing.T) {
	c := New(64 << 20)
	a, b := c.NewID(), c.NewID()
	for off := uint64(0); off < 1000; off++ {
		c.Set(a, off, []byte("a"))
		c.Set(b, off, []byte("b"))
	}
	c.EvictID(a)
	for off := uint64(0); off < 1000; off++ {
		if _, ok := c.Get(a, off); ok {
			t.Fatalf("block %d of evicted id still cached", off)
		}
		if v, ok := c.Get(b, off); !ok || string(v) != "b" {
			t.Fatalf("block %d of other id lost", off)
		}
	}
	if m := c.Metrics(); m.Count != 1000 {
		t.Fatalf("count %d after EvictID, want 1000", m.Count)
	}
}

// sameShardOffsets returns n offsets of id that fall in one shard.
func sameShardOffsets(c *Cache, id uint64, n int) []uint64 {
	var offs []uint64
	s0 := c.shard(id, 0)
	for off := uint64(0); len(offs) < n; off++ {
		if c.shard(id, off) == s0 {
			offs = append(offs, off)
		}
	}
	return offs
}

func TestSecondChance(t *testing.T) {
	c := New(0)
	c = New(int64(len(c.shards)) * (2*entryOverhead + 20)) // two blocks a shard
	offs := sameShardOffsets(c, 1, 4)
	c.Set(1, offs[0], make([]byte, 10))
	c.Set(1, offs[1], make([]byte, 10))
	c.Get(1, offs[0]) // offs[0] gets a second chance, offs[1] does not
	c.Set(1, offs[2], make([]byte, 10))
	if _, ok := c.Get(1, offs[1]); ok {
		t.Fatal("unreferenced block survived")
	}
	if _, ok := c.Get(1, offs[0]); !ok {
		t.Fatal("referenced block evicted")
	}
	// Both are referenced now: the hand clears both bits and then evicts
	// one of them; the cache still holds two blocks.
	c.Get(1, offs[2])
	c.Set(1, offs[3], make([]byte, 10))
	if m := c.Metrics(); m.Count != 2 || m.Size != 2*(entryOverhead+10) {
		t.Fatalf("after a full sweep: %+v", m)
	}
	if _, ok := c.Get(1, offs[3]); !ok {
		t.Fatal("block just inserted is missing")
	}
}

// TestScanResistance checks the property CLOCK keeps from LRU that matters
// for a block cache: a block hit between sweeps outlives blocks never hit.
func TestScanResistance(t *testing.T) {
	c := New(0)
	c = New(int64(len(c.shards)) * 10 * (entryOverhead + 100)) // ten blocks a shard
	offs := sameShardOffsets(c, 1, 200)
	hot := offs[0]
	c.Set(1, hot, make([]byte, 100))
	for _, off := range offs[1:] {
		if _, ok := c.Get(1, hot); !ok {
			t.Fatalf("hot block evicted before inserting %d", off)
		}
		c.Set(1, off, make([]byte, 100))
	}
	if m := c.Metrics(); m.Count != 10 {
		t.Fatalf("shard holds %d blocks, want 10", m.Count)
	}
}

func TestGetDoesNotAllocate(t *testing.T) {
	c := New(1 << 20)
	c.Set(1, 2, []byte("x"))
	if n := testing.AllocsPerRun(100, func() { c.Get(1, 2); c.Get(1, 3) }); n != 0 {
		t.Fatalf("Get allocates %v times", n)
	}
}

func TestConcurrent(t *testing.T) {
	c := New(128 << 10)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for i := 0; i < 5000; i++ {
				id, off := uint64(rng.IntN(4)), uint64(rng.IntN(200))
				switch rng.IntN(20) {
				case 0:
					c.EvictID(id)
				case 1, 2, 3, 4:
					c.Set(id, off, []byte{byte(id), byte(off)})
				default:
					if b, ok := c.Get(id, off); ok && (b[0] != byte(id) || b[1] != byte(off)) {
						t.Errorf("wrong block for (%d,%d)", id, off)
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	if m := c.Metrics(); m.Size > 128<<10 || m.Hits+m.Misses == 0 {
		t.Fatalf("metrics %+v", m)
	}
}

func BenchmarkGetHit(b *testing.B) {
	c := New(64 << 20)
	for off := uint64(0); off < 1024; off++ {
		c.Set(7, off*4096, make([]byte, 4096))
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		off := uint64(0)
		for pb.Next() {
			c.Get(7, (off%1024)*4096)
			off++
		}
	})
}

// BenchmarkGetHitRandom looks up blocks in random order over a working set
// larger than the CPU caches, as table seeks do.
func BenchmarkGetHitRandom(b *testing.B) {
	c := New(256 << 20)
	const ids, blocks = 3, 4000
	for id := uint64(1); id <= ids; id++ {
		for off := uint64(0); off < blocks; off++ {
			c.Set(id, off*4200, make([]byte, 64))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := c.Get(1+uint64(rng.IntN(ids)), uint64(rng.IntN(blocks))*4200); !ok {
			b.Fatal("miss")
		}
	}
}

func TestSetAux(t *testing.T) {
	c := New(1 << 20)
	c.SetAux(1, 0, []byte("block"), []byte("aux-bytes"))
	c.Set(1, 8, []byte("plain"))
	if b, a, ok := c.GetAux(1, 0); !ok || string(b) != "block" || string(a) != "aux-bytes" {
		t.Fatalf("GetAux = %q %q %v", b, a, ok)
	}
	if b, ok := c.Get(1, 0); !ok || string(b) != "block" {
		t.Fatalf("Get of a SetAux entry = %q %v", b, ok)
	}
	if b, a, ok := c.GetAux(1, 8); !ok || string(b) != "plain" || a != nil {
		t.Fatalf("GetAux of a Set entry = %q %q %v", b, a, ok)
	}
	if _, _, ok := c.GetAux(2, 0); ok {
		t.Fatal("GetAux hit a missing entry")
	}
	// Both buffers are charged.
	if m := c.Metrics(); m.Size != int64(len("block")+len("aux-bytes")+len("plain")+2*entryOverhead) {
		t.Fatalf("size %d", m.Size)
	}
	c.EvictID(1)
	if m := c.Metrics(); m.Size != 0 || m.Count != 0 {
		t.Fatalf("after EvictID: %+v", m)
	}
}

// TestPinnedValueSurvivesEviction fills a small cache far past its capacity
// around pinned values: they stay, their charge counts in Size and
// PinnedSize, and once unpinned the next flood evicts them.
func TestPinnedValueSurvivesEviction(t *testing.T) {
	c := New(64 << 10)
	id := c.NewID()
	const n = 8
	for i := range n {
		if !c.SetValue(id, uint64(i)<<20, i, 1000, true) {
			t.Fatalf("pinned value %d not cached", i)
		}
	}
	if m := c.Metrics(); m.PinnedSize != n*(1000+entryOverhead) {
		t.Fatalf("PinnedSize %d, want %d", m.PinnedSize, n*(1000+entryOverhead))
	}
	flood := func(base uint64) {
		for j := range 2000 {
			c.Set(id, base+uint64(j)*4096, make([]byte, 1000))
		}
	}
	flood(1 << 40)
	for i := range n {
		if v, ok := c.GetValue(id, uint64(i)<<20); !ok || v.(int) != i {
			t.Fatalf("pinned value %d: %v, %v after the flood", i, v, ok)
		}
	}
	if m := c.Metrics(); m.Size > m.Capacity || m.Size < m.PinnedSize {
		t.Fatalf("metrics %+v", m)
	}
	for i := range n {
		c.Unpin(id, uint64(i)<<20)
		c.Unpin(id, uint64(i)<<20) // one pin too many does nothing
	}
	if m := c.Metrics(); m.PinnedSize != 0 {
		t.Fatalf("PinnedSize %d after Unpin", m.PinnedSize)
	}
	for i := range n {
		if !evictable(c, id, uint64(i)<<20) {
			t.Fatalf("unpinned value %d was not evicted", i)
		}
	}
}

// evictable runs the clock of the shard of (id, offset) until the entry
// there is evicted or nothing else can be, and reports whether it was.
func evictable(c *Cache, id, offset uint64) bool {
	s := c.shard(id, offset)
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.entries[key{id, offset}] != nil {
		if !s.evictOne() {
			return false
		}
	}
	return true
}

// TestSetValueCapacity: an unpinned value larger than its shard's share is
// not cached, a pinned one is (past the capacity), and a disabled cache
// caches neither.
func TestSetValueCapacity(t *testing.T) {
	c := New(64 << 10)
	id := c.NewID()
	if c.SetValue(id, 0, "big", 64<<10, false) {
		t.Fatal("an unpinned value larger than the cache was cached")
	}
	if !c.SetValue(id, 0, "big", 64<<10, true) {
		t.Fatal("a pinned value larger than the cache was not cached")
	}
	if m := c.Metrics(); m.Size <= m.Capacity || m.PinnedSize != m.Size {
		t.Fatalf("metrics %+v", m)
	}
	// With its shard full of a pinned value, a block there is not cached
	// and nothing loops.
	c.SetAux(id, 0+1<<30, make([]byte, 100), nil)
	d := New(0)
	if d.SetValue(1, 0, "x", 1, true) {
		t.Fatal("a disabled cache cached a value")
	}
	if _, ok := d.PinValue(1, 0); ok {
		t.Fatal("a disabled cache pinned a value")
	}
	d.Unpin(1, 0)
}

// TestValuesAndBlocksApart: a value is found only by GetValue and PinValue,
// a block only by Get and GetAux, at any key.
func TestValuesAndBlocksApart(t *testing.T) {
	c := New(1 << 20)
	id := c.NewID()
	c.SetValue(id, 0, []int{1}, 8, false)
	c.Set(id, 4096, []byte("block"))
	if _, ok := c.Get(id, 0); ok {
		t.Fatal("Get found a value")
	}
	if _, _, ok := c.GetAux(id, 0); ok {
		t.Fatal("GetAux found a value")
	}
	if _, ok := c.GetValue(id, 4096); ok {
		t.Fatal("GetValue found a block")
	}
	if _, ok := c.PinValue(id, 4096); ok {
		t.Fatal("PinValue pinned a block")
	}
	if v, ok := c.GetValue(id, 0); !ok || v.([]int)[0] != 1 {
		t.Fatalf("GetValue = %v, %v", v, ok)
	}
}

// TestPinValue pins a cached value twice: it takes two Unpins to make it
// evictable, a SetValue over it keeps its pins, and EvictID drops it with
// its pins.
func TestPinValue(t *testing.T) {
	c := New(16 << 10)
	id := c.NewID()
	c.SetValue(id, 0, "v", 100, false)
	if m := c.Metrics(); m.PinnedSize != 0 {
		t.Fatalf("unpinned value counted as pinned: %+v", m)
	}
	for range 2 {
		if v, ok := c.PinValue(id, 0); !ok || v.(string) != "v" {
			t.Fatalf("PinValue = %v, %v", v, ok)
		}
	}
	c.SetValue(id, 0, "w", 100, false) // keeps both pins
	c.Unpin(id, 0)
	flood := func(base uint64) {
		for j := range 1000 {
			c.Set(id, base+uint64(j)*4096, make([]byte, 500))
		}
	}
	flood(1 << 30)
	if v, ok := c.GetValue(id, 0); !ok || v.(string) != "w" {
		t.Fatalf("value with one pin left: %v, %v", v, ok)
	}
	if evictable(c, id, 0) {
		t.Fatal("a value with one pin left was evicted")
	}
	c.Unpin(id, 0)
	if !evictable(c, id, 0) {
		t.Fatal("a value was not evicted after its last Unpin")
	}
	c.SetValue(id, 0, "x", 100, true)
	c.EvictID(id)
	if m := c.Metrics(); m.PinnedSize != 0 || m.Count != 0 || m.Size != 0 {
		t.Fatalf("after EvictID: %+v", m)
	}
	c.Unpin(id, 0) // after EvictID: nothing to unpin
}

// TestValuesOutliveBlocks: a value (an index or filter block, high
// priority) hit once outlives a block hit once, while blocks hit once each
// stream through the shard; values past half the shard age as blocks do.
func TestValuesOutliveBlocks(t *testing.T) {
	c := New(0)
	// Eight entries of 10 bytes a shard.
	c = New(int64(len(c.shards)) * 8 * (entryOverhead + 10))
	offs := sameShardOffsets(c, 1, 200)
	cached := func(off uint64) bool { // without a hit
		s := c.shard(1, off)
		return s.entries[key{1, off}] != nil
	}
	c.SetValue(1, offs[0], "index", 10, false)
	c.Set(1, offs[1], make([]byte, 10))
	c.GetValue(1, offs[0])
	c.Get(1, offs[1])
	if m := c.Metrics(); m.HighPrioritySize != entryOverhead+10 {
		t.Fatalf("HighPrioritySize %d, want %d", m.HighPrioritySize, entryOverhead+10)
	}
	blockGone, valueGone := -1, -1
	for i, off := range offs[2:] {
		c.Set(1, off, make([]byte, 10))
		c.Get(1, off)
		if blockGone < 0 && !cached(offs[1]) {
			blockGone = i
		}
		if valueGone < 0 && !cached(offs[0]) {
			valueGone = i
		}
	}
	if blockGone < 0 || valueGone < 0 || valueGone < 2*blockGone {
		t.Fatalf("the block left after %d inserts, the value after %d: want both, the value at least twice as late", blockGone, valueGone)
	}

	// Values alone: the newest is cached, and the shard stays in its
	// capacity (values past half of it get a second chance only).
	c = New(int64(len(c.shards)) * 8 * (entryOverhead + 10))
	for _, off := range offs[:64] {
		c.SetValue(1, off, "index", 10, false)
		c.GetValue(1, off)
	}
	if s := c.shard(1, offs[0]); s.size > s.capacity || len(s.entries) != 8 {
		t.Fatalf("shard of values: size %d of %d, %d entries", s.size, s.capacity, len(s.entries))
	}
	if !cached(offs[63]) {
		t.Fatal("the last value inserted is missing")
	}
}

// TestPinnedValuesLeaveThePriorityToOthers: values pinned past half the
// shard (a table's top-level index, say) do not take high priority away
// from the unpinned ones.
func TestPinnedValuesLeaveThePriorityToOthers(t *testing.T) {
	c := New(0)
	per := int64(entryOverhead + 10)
	c = New(int64(len(c.shards)) * 16 * per) // sixteen small entries a shard
	offs := sameShardOffsets(c, 1, 200)
	cached := func(off uint64) bool { return c.shard(1, off).entries[key{1, off}] != nil }
	c.SetValue(1, offs[0], "top level", 9*per-entryOverhead, true) // over half, pinned
	c.SetValue(1, offs[1], "partition", 10, false)
	c.Set(1, offs[2], make([]byte, 10))
	c.GetValue(1, offs[1])
	c.Get(1, offs[2])
	blockGone, valueGone := -1, -1
	for i, off := range offs[3:] {
		c.Set(1, off, make([]byte, 10))
		c.Get(1, off)
		if blockGone < 0 && !cached(offs[2]) {
			blockGone = i
		}
		if valueGone < 0 && !cached(offs[1]) {
			valueGone = i
		}
	}
	if !cached(offs[0]) {
		t.Fatal("the pinned value was evicted")
	}
	if blockGone < 0 || valueGone < 0 || valueGone < 2*blockGone {
		t.Fatalf("the block left after %d inserts, the value after %d: want both, the value at least twice as late", blockGone, valueGone)
	}
}
