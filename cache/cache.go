package cache

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// entryOverhead is charged per cached block on top of its length: the entry
// struct, its map slots and the slice header, rounded up.
const entryOverhead = 128

// CacheMetrics is a snapshot of a Cache's counters.
type CacheMetrics struct {
	// Hits and Misses count Get calls that found, and did not find, a block.
	Hits, Misses uint64
	// Size is the charged size of the cached blocks, in bytes.
	Size int64
	// Count is the number of cached blocks.
	Count int
	// Capacity is the byte budget the cache was created with.
	Capacity int64
	// PinnedSize is the part of Size that pinned values hold (SetValue
	// with pin), which eviction passes over.
	PinnedSize int64
	// HighPrioritySize is the part of Size that values hold (SetValue:
	// decoded index and filter blocks), which eviction keeps longer.
	HighPrioritySize int64
}

type key struct {
	id, offset uint64
}

// entry is one cached block. It sits in its shard's clock ring and on the
// per-id list that EvictID walks.
type entry struct {
	key   key
	block []byte
	// aux is an optional second buffer cached with the block (SetAux), kept
	// apart so that blocks stay laid out as they would be alone.
	aux []byte
	// value is an object a reader built from a block (SetValue), cached
	// instead of block and aux; pins counts the holders that keep it from
	// eviction.
	value  any
	pins   int32
	charge int64
	// high marks a value (SetValue): high priority, as RocksDB caches
	// index and filter blocks by default.
	high bool
	// countdown is the CLOCK counter: the sweeps the entry survives before
	// the hand evicts it. A hit raises it (to lowHit for a block, highHit
	// for a value), the hand lowers it by one each time it passes. A hit
	// writes it only when it would raise it, so hot entries' cache lines
	// stay shared between cores.
	countdown      atomic.Uint32
	slot           int // index in the shard's clock ring
	idPrev, idNext *entry
}

// shard is one lock domain of the cache. Hits take the read lock and only
// raise an entry's countdown; Set, eviction and EvictID take the write
// lock. The clock ring is unordered: a removal moves the last entry into
// the hole, which CLOCK tolerates (it only approximates LRU anyway).
type shard struct {
	mu      sync.RWMutex
	hits    atomic.Uint64
	misses  atomic.Uint64
	entries map[key]*entry
	byID    map[uint64]*entry // head of each id's list of entries
	clock   []*entry
	hand    int
	size    int64
	pinned  int64 // charge of the entries with pins > 0
	// high is the charge of the high-priority entries (values, the
	// pinned ones included: only values are pinned); when the unpinned
	// ones pass highCapacity they get the blocks' second chance only.
	high, highCapacity int64
	capacity           int64
	_                  [64]byte // keep shards on separate cache lines
}

// Cache is a sharded block cache bounded in bytes, with CLOCK (second
// chance) eviction. It is safe for concurrent use.
type Cache struct {
	capacity int64
	mask     uint64
	shards   []shard
	nextID   atomic.Uint64
	// disabledMisses counts misses of a zero-capacity cache.
	disabledMisses atomic.Uint64
}

// New returns a cache holding at most capacity bytes of blocks (charged as
// len(block), plus len(aux) for SetAux, plus a fixed per-block overhead). Capacity 0 disables caching:
// Get always misses and Set does nothing.
func New(capacity int64) *Cache {
	if capacity < 0 {
		capacity = 0
	}
	n := 16
	for n < 4*runtime.GOMAXPROCS(0) {
		n *= 2
	}
	c := &Cache{capacity: capacity, mask: uint64(n - 1), shards: make([]shard, n)}
	per := capacity / int64(n)
	for i := range c.shards {
		s := &c.shards[i]
		s.capacity = per
		if i == 0 {
			// The remainder goes to shard 0 so the shards add up to capacity.
			s.capacity += capacity - per*int64(n)
		}
		s.highCapacity = int64(float64(s.capacity) * highPoolRatio)
		s.entries = make(map[key]*entry)
		s.byID = make(map[uint64]*entry)
	}
	return c
}

// The CLOCK counters (entry.countdown) by priority. A block is second
// chance: inserted at 0, raised to 1 by a hit. A value (SetValue: a
// decoded index or filter block, which every lookup of its table or
// partition needs) is inserted at highInsert and raised to highHit, so the
// hand passes a hot one three times before a hot block's once: RocksDB's
// HyperClockCache counts the same way (countdowns 3, 2 and 1 for high, low
// and bottom priority).
const (
	lowHit     = 1
	highInsert = 2
	highHit    = 3
	// highPoolRatio bounds the share of a shard that values keep at high
	// priority (RocksDB's LRUCache high_pri_pool_ratio, default 0.5):
	// past it they age as blocks do, so indexes larger than the cache do
	// not starve the data blocks.
	highPoolRatio = 0.5
)

// NewID returns a fresh namespace for the blocks of one table reader.
func (c *Cache) NewID() uint64 { return c.nextID.Add(1) }

func (c *Cache) shard(id, offset uint64) *shard {
	// A multiply-xorshift mix of both halves; offsets are multiples of
	// block sizes, so their low bits alone would pick few shards.
	h := id*0x9E3779B97F4A7C15 ^ offset*0xC2B2AE3D27D4EB4F
	h ^= h >> 29
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 32
	return &c.shards[h&c.mask]
}

// Get returns the block cached for (id, offset). The block must not be
// modified. Get does not allocate.
func (c *Cache) Get(id, offset uint64) ([]byte, bool) {
	block, _, ok := c.GetAux(id, offset)
	return block, ok
}

// GetAux is Get that also returns the auxiliary buffer cached with the
// block by SetAux (nil if it was cached by Set). Neither may be modified.
// GetAux does not allocate.
func (c *Cache) GetAux(id, offset uint64) (block, aux []byte, ok bool) {
	if c.capacity == 0 {
		c.disabledMisses.Add(1)
		return nil, nil, false
	}
	s := c.shard(id, offset)
	s.mu.RLock()
	e := s.entries[key{id, offset}]
	if e == nil || e.value != nil {
		s.mu.RUnlock()
		s.misses.Add(1)
		return nil, nil, false
	}
	if e.countdown.Load() < lowHit {
		e.countdown.Store(lowHit)
	}
	block, aux = e.block, e.aux
	s.mu.RUnlock()
	s.hits.Add(1)
	return block, aux, true
}

// Set caches block for (id, offset), replacing any block cached there. The
// cache keeps the slice: the caller must never modify it afterwards. A block
// larger than a shard's share of the capacity is not cached.
func (c *Cache) Set(id, offset uint64, block []byte) {
	c.SetAux(id, offset, block, nil)
}

// SetAux is Set with an auxiliary buffer kept with the block (a reader's
// search structure over it, say); the entry is charged for both. The cache
// keeps both slices: the caller must never modify them afterwards.
func (c *Cache) SetAux(id, offset uint64, block, aux []byte) {
	if c.capacity == 0 {
		return
	}
	charge := int64(len(block)) + int64(len(aux)) + entryOverhead
	s := c.shard(id, offset)
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{id, offset}
	if old := s.entries[k]; old != nil {
		s.remove(old)
	}
	if charge > s.capacity {
		return
	}
	for s.size+charge > s.capacity {
		if !s.evictOne() {
			return // the rest is pinned
		}
	}
	s.insert(&entry{key: k, block: block, aux: aux, charge: charge})
}

// insert adds e, whose key is not in the shard. s.mu is held for writing.
func (s *shard) insert(e *entry) {
	e.slot = len(s.clock)
	s.entries[e.key] = e
	s.clock = append(s.clock, e)
	if head := s.byID[e.key.id]; head != nil {
		e.idNext = head
		head.idPrev = e
	}
	s.byID[e.key.id] = e
	s.size += e.charge
	if e.pins > 0 {
		s.pinned += e.charge
	}
	if e.high {
		s.high += e.charge
	}
}

// SetValue caches v, an object a reader built from the block at (id,
// offset) (a decoded index, say), charged charge bytes, replacing what is
// cached there (its pins carry over). Values are cached at high priority:
// eviction keeps them longer than blocks (see highHit). With pin the entry takes a pin: it
// is never evicted while pinned, and is cached even past the capacity
// (the memory is held anyway; the other entries make room). It reports
// whether v is cached: an unpinned value that does not fit is not, and a
// zero-capacity cache caches nothing.
func (c *Cache) SetValue(id, offset uint64, v any, charge int64, pin bool) bool {
	if c.capacity == 0 {
		return false
	}
	charge += entryOverhead
	s := c.shard(id, offset)
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{id, offset}
	var pins int32
	if old := s.entries[k]; old != nil {
		pins = old.pins
		s.remove(old)
	}
	if pin {
		pins++
	}
	for s.size+charge > s.capacity {
		if !s.evictOne() {
			if pins == 0 {
				return false
			}
			break
		}
	}
	e := &entry{key: k, value: v, pins: pins, charge: charge, high: true}
	e.countdown.Store(highInsert)
	s.insert(e)
	return true
}

// GetValue returns the object SetValue cached for (id, offset). It does
// not allocate.
func (c *Cache) GetValue(id, offset uint64) (any, bool) { return c.value(id, offset, false) }

// PinValue is GetValue that also pins the entry it finds (see SetValue);
// the holder gives the pin back with Unpin.
func (c *Cache) PinValue(id, offset uint64) (any, bool) { return c.value(id, offset, true) }

// value is GetValue, and PinValue when pin: a pin is taken under the
// shard's write lock, a plain hit under its read lock.
func (c *Cache) value(id, offset uint64, pin bool) (any, bool) {
	if c.capacity == 0 {
		c.disabledMisses.Add(1)
		return nil, false
	}
	s := c.shard(id, offset)
	if pin {
		s.mu.Lock()
		defer s.mu.Unlock()
	} else {
		s.mu.RLock()
		defer s.mu.RUnlock()
	}
	e := s.entries[key{id, offset}]
	if e == nil || e.value == nil {
		s.misses.Add(1)
		return nil, false
	}
	if pin {
		if e.pins == 0 {
			s.pinned += e.charge
		}
		e.pins++
	}
	if e.countdown.Load() < highHit {
		e.countdown.Store(highHit)
	}
	s.hits.Add(1)
	return e.value, true
}

// Unpin gives back one pin of the value at (id, offset); with none left
// the entry is evicted like any other. It does nothing when nothing pinned
// is cached there (EvictID removed it, say).
func (c *Cache) Unpin(id, offset uint64) {
	if c.capacity == 0 {
		return
	}
	s := c.shard(id, offset)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key{id, offset}]
	if e == nil || e.pins == 0 {
		return
	}
	e.pins--
	if e.pins == 0 {
		s.pinned -= e.charge
	}
}

// EvictID drops every block cached under id; the table cache calls it when
// a file is deleted.
func (c *Cache) EvictID(id uint64) {
	if c.capacity == 0 {
		return
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for e := s.byID[id]; e != nil; e = s.byID[id] {
			s.remove(e)
		}
		s.mu.Unlock()
	}
}

// Metrics returns the cache's counters.
func (c *Cache) Metrics() CacheMetrics {
	m := CacheMetrics{Capacity: c.capacity, Misses: c.disabledMisses.Load()}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		m.Hits += s.hits.Load()
		m.Misses += s.misses.Load()
		m.Size += s.size
		m.PinnedSize += s.pinned
		m.HighPrioritySize += s.high
		m.Count += len(s.entries)
		s.mu.RUnlock()
	}
	return m
}

// evictOne advances the clock hand to the first unpinned entry whose
// countdown is zero, counting down those it passes, and removes that
// entry. It returns false when every entry is pinned (or there is none).
// s.mu is held for writing.
func (s *shard) evictOne() bool {
	// highHit+1 turns of the ring find an unpinned entry if there is one:
	// each turn lowers every countdown it passes by one.
	for range (highHit+1)*len(s.clock) + 1 {
		if s.hand >= len(s.clock) {
			s.hand = 0
		}
		if len(s.clock) == 0 {
			return false
		}
		e := s.clock[s.hand]
		if e.pins > 0 {
			s.hand++
			continue
		}
		if c := e.countdown.Load(); c > 0 {
			if c > lowHit && s.high-s.pinned > s.highCapacity {
				c = lowHit // the high pool is over its share: second chance only
			}
			e.countdown.Store(c - 1)
			s.hand++
			continue
		}
		// remove moves the last entry into this slot: the hand stays, so
		// that entry is looked at next.
		s.remove(e)
		return true
	}
	return false
}

// remove takes e out of the shard entirely. s.mu is held for writing.
func (s *shard) remove(e *entry) {
	last := len(s.clock) - 1
	if moved := s.clock[last]; moved != e {
		s.clock[e.slot] = moved
		moved.slot = e.slot
	}
	s.clock[last] = nil
	s.clock = s.clock[:last]
	if e.idPrev != nil {
		e.idPrev.idNext = e.idNext
	} else if e.idNext != nil {
		s.byID[e.key.id] = e.idNext
	} else {
		delete(s.byID, e.key.id)
	}
	if e.idNext != nil {
		e.idNext.idPrev = e.idPrev
	}
	e.idPrev, e.idNext = nil, nil
	delete(s.entries, e.key)
	s.size -= e.charge
	if e.pins > 0 {
		s.pinned -= e.charge
	}
	if e.high {
		s.high -= e.charge
	}
	e.block, e.aux, e.value = nil, nil, nil
}
