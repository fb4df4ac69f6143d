package memtable

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/rangedel"
)

// ErrArenaFull is returned by Add when the entry does not fit in what is left
// of the arena; the memtable is unchanged then.
var ErrArenaFull = errors.New("shale: memtable arena is full")

const (
	maxHeight = 20

	// Node field offsets; see the layout in doc.go.
	offTrailer   = 0
	offKeyLen    = 8
	offValueLen  = 12
	offHeight    = 16
	offValueOff  = 20
	offTower     = 24
	nodeAlign    = 8
	headNodeSize = (offTower + 4*maxHeight + nodeAlign - 1) &^ (nodeAlign - 1)

	// reserved keeps offset 0 free to mean "no node".
	reserved = nodeAlign
	// minCapacity holds the reserved word and the two head nodes.
	minCapacity = reserved + 2*headNodeSize
	// maxCapacity keeps every offset within a uint32.
	maxCapacity = math.MaxUint32 &^ (nodeAlign - 1)
)

// FixedOverhead is the arena bytes an empty memtable already uses (the
// reserved word and the two list heads): a memtable that must hold entries
// of n bytes by EntrySizeBound needs a capacity of FixedOverhead + n.
const FixedOverhead = minCapacity

// EntrySizeBound returns an upper bound on the arena bytes one entry with the
// given key and value lengths takes: Add never returns ErrArenaFull when at
// least that much of the capacity is left.
func EntrySizeBound(keyLen, valueLen int) int {
	return offTower + 4*maxHeight + keyLen + valueLen + nodeAlign - 1
}

// skiplist is the head of one list in the arena.
type skiplist struct {
	head uint32
	// height is the tallest tower linked so far; searches start there.
	height atomic.Uint32
}

// rangeDelCache is the fragmented form of the first count range tombstones.
type rangeDelCache struct {
	count int64
	list  *rangedel.List
}

// Memtable is an arena-backed skiplist of internal keys: one writer at a time,
// any number of concurrent lock-free readers.
type Memtable struct {
	cmp base.Compare
	// bytewise is set for the default comparer, so the hot comparisons call
	// bytes.Compare directly instead of through a function value.
	bytewise bool
	buf      []byte

	// used is the arena bytes handed out from the front (nodes and keys);
	// only the writer changes it.
	used atomic.Uint64
	// valueTop is where the value region, growing down from the end of
	// the arena, begins. Keeping values apart packs nodes and keys densely,
	// so a search misses the CPU cache less often. Writer only.
	valueTop     uint64
	valueBytes   atomic.Uint64
	count        atomic.Int64
	numRangeDels atomic.Int64

	points    skiplist
	rangeDels skiplist

	// Writer scratch: the splice found for the entry being added.
	prev, next [maxHeight]uint32

	rangeDelMu    sync.Mutex // serializes rebuilds of rangeDelCache
	rangeDelCache atomic.Pointer[rangeDelCache]

	// bloom is the prefix bloom of the point keys (SetPrefixBloom), nil
	// for none.
	bloom *prefixBloom
}

// New returns an empty memtable whose arena holds capacity bytes (clamped to
// the range of 32-bit offsets, and to at least what the list heads need).
// A nil cmp means base.DefaultComparer.
func New(cmp *base.Comparer, capacity int) *Memtable {
	// Allocate as uint64 words so that node offsets that are multiples of 8
	// are 8-byte aligned in memory too.
	return NewOnArena(cmp, make([]uint64, ArenaWords(capacity)))
}

// ArenaWords returns the length of the arena New allocates for capacity.
func ArenaWords(capacity int) int {
	c := uint64(max(capacity, minCapacity))
	if c > maxCapacity {
		c = maxCapacity
	}
	return int((c + 7) / 8)
}

// NewOnArena is New on an arena the caller provides, typically the Arena of
// a memtable no reader can reach any more: reusing one spares the page
// faults a fresh allocation of that size costs. Its contents need not be
// zero; its length must be ArenaWords of the capacity wanted.
func NewOnArena(cmp *base.Comparer, words []uint64) *Memtable {
	if cmp == nil {
		cmp = base.DefaultComparer
	}
	c := min(uint64(len(words))*8, maxCapacity)
	if c < minCapacity {
		base.AssertionFailedf("memtable arena of %d words is below the minimum", len(words))
	}
	m := &Memtable{
		cmp:      cmp.Compare,
		bytewise: cmp == base.DefaultComparer,
		buf:      unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), c),
	}
	m.used.Store(reserved)
	m.valueTop = uint64(len(m.buf))
	m.points.head = m.newHead()
	m.rangeDels.head = m.newHead()
	m.points.height.Store(1)
	m.rangeDels.height.Store(1)
	m.rangeDelCache.Store(&rangeDelCache{list: rangedel.NewList(cmp.Compare, nil)})
	return m
}

func (m *Memtable) newHead() uint32 {
	n, ok := m.alloc(headNodeSize)
	if !ok {
		base.AssertionFailedf("memtable arena too small for its list heads")
	}
	*m.u32(n + offHeight) = maxHeight
	// A recycled arena holds old bytes: the head's tower must start empty.
	clear(m.buf[n+offTower : n+headNodeSize])
	return n
}

// Arena returns the memtable's arena for NewOnArena. The caller guarantees
// that nothing reads the memtable, or any key or value it returned, again.
func (m *Memtable) Arena() []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(&m.buf[0])), (len(m.buf)+7)/8)
}

// alloc hands out size bytes at an aligned offset; only the writer calls it.
func (m *Memtable) alloc(size uint64) (uint32, bool) {
	off := (m.used.Load() + nodeAlign - 1) &^ (nodeAlign - 1)
	if off+size > m.valueTop {
		return 0, false
	}
	m.used.Store(off + size)
	return uint32(off), true
}

func (m *Memtable) u32(off uint32) *uint32 {
	return (*uint32)(unsafe.Pointer(&m.buf[off]))
}

func (m *Memtable) trailer(n uint32) uint64 {
	return *(*uint64)(unsafe.Pointer(&m.buf[n+offTrailer]))
}

func (m *Memtable) nextOf(n uint32, level int) uint32 {
	return atomic.LoadUint32(m.u32(n + offTower + 4*uint32(level)))
}

func (m *Memtable) setNext(n uint32, level int, to uint32) {
	atomic.StoreUint32(m.u32(n+offTower+4*uint32(level)), to)
}

func (m *Memtable) key(n uint32) []byte {
	height := *m.u32(n + offHeight)
	k := n + offTower + 4*height
	end := k + *m.u32(n + offKeyLen)
	return m.buf[k:end:end]
}

func (m *Memtable) value(n uint32) []byte {
	v := *m.u32(n + offValueOff)
	end := v + *m.u32(n + offValueLen)
	return m.buf[v:end:end]
}

// compareNode orders node n against the internal key (key, trailer).
func (m *Memtable) compareNode(n uint32, key []byte, trailer uint64) int {
	var c int
	if m.bytewise {
		c = bytes.Compare(m.key(n), key)
	} else {
		c = m.cmp(m.key(n), key)
	}
	if c != 0 {
		return c
	}
	switch t := m.trailer(n); {
	case t > trailer:
		return -1
	case t < trailer:
		return 1
	}
	return 0
}

// seekGE returns the first node of l at or after (key, trailer), or 0.
func (m *Memtable) seekGE(l *skiplist, key []byte, trailer uint64) uint32 {
	x := l.head
	var nx uint32
	for level := int(l.height.Load()) - 1; level >= 0; level-- {
		for {
			nx = m.nextOf(x, level)
			if nx == 0 || m.compareNode(nx, key, trailer) >= 0 {
				break
			}
			x = nx
		}
	}
	return nx
}

// seekLT returns the last node of l before (key, trailer), or 0.
func (m *Memtable) seekLT(l *skiplist, key []byte, trailer uint64) uint32 {
	x := l.head
	for level := int(l.height.Load()) - 1; level >= 0; level-- {
		for {
			nx := m.nextOf(x, level)
			if nx == 0 || m.compareNode(nx, key, trailer) >= 0 {
				break
			}
			x = nx
		}
	}
	if x == l.head {
		return 0
	}
	return x
}

// last returns the last node of l, or 0.
func (m *Memtable) last(l *skiplist) uint32 {
	x := l.head
	for level := int(l.height.Load()) - 1; level >= 0; level-- {
		for nx := m.nextOf(x, level); nx != 0; nx = m.nextOf(x, level) {
			x = nx
		}
	}
	if x == l.head {
		return 0
	}
	return x
}

func randomHeight() int {
	r := rand.Uint64()
	h := 1
	for h < maxHeight && r&3 == 0 {
		h++
		r >>= 2
	}
	return h
}

// Add inserts an entry. Only one goroutine may call Add at a time, but any
// number may read concurrently. A RangeDelete entry has key = start and
// value = end; it is kept apart from point entries (NewIter and Get do not see
// it) and returned by RangeTombstones. The DB never adds the same (key, seq)
// twice. Add returns ErrArenaFull, changing nothing, when the entry does not
// fit.
func (m *Memtable) Add(seq base.SeqNum, kind base.Kind, key, value []byte) error {
	if seq > base.SeqNumMax {
		base.AssertionFailedf("memtable: seqnum %d above SeqNumMax", seq)
	}
	l := &m.points
	if kind == base.KindRangeDelete {
		l = &m.rangeDels
	}
	h := randomHeight()
	nodeSize := uint64(offTower+4*h) + uint64(len(key))
	front := (m.used.Load() + nodeAlign - 1) &^ (nodeAlign - 1)
	if front+nodeSize+uint64(len(value)) > m.valueTop {
		return ErrArenaFull
	}
	m.valueTop -= uint64(len(value))
	v := uint32(m.valueTop)
	n, _ := m.alloc(nodeSize)
	trailer := base.MakeTrailer(seq, kind)
	*(*uint64)(unsafe.Pointer(&m.buf[n+offTrailer])) = trailer
	*m.u32(n + offKeyLen) = uint32(len(key))
	*m.u32(n + offValueLen) = uint32(len(value))
	*m.u32(n + offHeight) = uint32(h)
	*m.u32(n + offValueOff) = v
	k := n + offTower + 4*uint32(h)
	copy(m.buf[k:], key)
	copy(m.buf[v:], value)
	m.valueBytes.Add(uint64(len(value)))
	if m.bloom != nil && kind != base.KindRangeDelete {
		m.bloom.add(key)
	}

	// Find the splice. Levels above the list's height splice at the head.
	x := l.head
	listHeight := int(l.height.Load())
	for level := maxHeight - 1; level >= 0; level-- {
		if level >= listHeight {
			m.prev[level], m.next[level] = l.head, 0
			continue
		}
		for {
			nx := m.nextOf(x, level)
			if nx == 0 || m.compareNode(nx, key, trailer) >= 0 {
				m.prev[level], m.next[level] = x, nx
				break
			}
			x = nx
		}
	}
	// The node is complete once its tower points at its successors; each
	// atomic store into a predecessor then publishes it at one level.
	for level := 0; level < h; level++ {
		m.setNext(n, level, m.next[level])
	}
	for level := 0; level < h; level++ {
		m.setNext(m.prev[level], level, n)
	}
	if h > listHeight {
		l.height.Store(uint32(h))
	}
	if kind == base.KindRangeDelete {
		m.numRangeDels.Add(1)
	}
	m.count.Add(1)
	return nil
}

// Get returns the newest point entry of key with seqnum <= snapshot. value
// aliases the arena and must not be modified; it stays valid as long as the
// memtable. Range tombstones are not applied.
func (m *Memtable) Get(key []byte, snapshot base.SeqNum) (value []byte, kind base.Kind, seq base.SeqNum, found bool) {
	snapshot = min(snapshot, base.SeqNumMax)
	n := m.seekGE(&m.points, key, base.MakeTrailer(snapshot, base.KindMax))
	if n == 0 || m.cmp(m.key(n), key) != 0 {
		return nil, 0, 0, false
	}
	t := m.trailer(n)
	return m.value(n), base.Kind(t & 0xff), base.SeqNum(t >> 8), true
}

// Versions calls fn with each point entry of key with seqnum <= snapshot,
// newest first, until fn returns false, and reports whether there was any.
// Values alias the arena, as Get's. Range tombstones are not applied.
func (m *Memtable) Versions(key []byte, snapshot base.SeqNum, fn func(value []byte, kind base.Kind, seq base.SeqNum) bool) bool {
	snapshot = min(snapshot, base.SeqNumMax)
	found := false
	for n := m.seekGE(&m.points, key, base.MakeTrailer(snapshot, base.KindMax)); n != 0 && m.cmp(m.key(n), key) == 0; n = m.nextOf(n, 0) {
		found = true
		t := m.trailer(n)
		if !fn(m.value(n), base.Kind(t&0xff), base.SeqNum(t>>8)) {
			break
		}
	}
	return found
}

// RangeTombstones returns the range tombstones added so far, fragmented. The
// result is cached and rebuilt only after a new range tombstone is added.
func (m *Memtable) RangeTombstones() *rangedel.List {
	if c := m.rangeDelCache.Load(); c.count == m.numRangeDels.Load() {
		return c.list
	}
	m.rangeDelMu.Lock()
	defer m.rangeDelMu.Unlock()
	// Load the count before walking the list: the walk sees at least that
	// many tombstones, so the cache is never stamped newer than its content.
	count := m.numRangeDels.Load()
	if c := m.rangeDelCache.Load(); c.count == count {
		return c.list
	}
	ts := make([]rangedel.Tombstone, 0, count)
	for n := m.nextOf(m.rangeDels.head, 0); n != 0; n = m.nextOf(n, 0) {
		ts = append(ts, rangedel.Tombstone{Start: m.key(n), End: m.value(n), Seq: base.SeqNum(m.trailer(n) >> 8)})
	}
	list := rangedel.NewList(m.cmp, rangedel.Fragment(m.cmp, ts))
	m.rangeDelCache.Store(&rangeDelCache{count: count, list: list})
	return list
}

// ApproximateMemoryUsage returns the arena bytes used, list heads included.
func (m *Memtable) ApproximateMemoryUsage() int {
	return int(m.used.Load() + m.valueBytes.Load())
}

// Capacity returns the arena size in bytes (New's capacity after clamping).
func (m *Memtable) Capacity() int { return len(m.buf) }

// Empty reports whether nothing has been added.
func (m *Memtable) Empty() bool { return m.count.Load() == 0 }

// Count returns the number of entries added, point and range.
func (m *Memtable) Count() int { return int(m.count.Load()) }
