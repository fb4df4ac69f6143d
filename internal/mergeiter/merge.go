package mergeiter

import (
	"bytes"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/rangedel"
)

// child is one input of a merging iterator with its current key cached, so
// that heap comparisons do not go through the interface.
type child struct {
	iter base.InternalIterator
	// prep is iter as a base.SeekPreparer, nil when it is none; pseek and
	// pprep as a base.PrefixSeeker and PrefixSeekPreparer.
	prep  base.SeekPreparer
	pseek base.PrefixSeeker
	pprep base.PrefixSeekPreparer
	key   base.InternalKey
	index int
	// valid is true while iter is positioned at an entry. The merge keeps the
	// invariant that, in forward mode, every entry of a child before its
	// position (all entries, when !valid) sorts at or before the merged
	// iterator's current entry; in reverse mode the mirror image holds. This
	// is what lets a direction switch move each child by a single step.
	valid bool
}

// childDels is what applying range tombstones (SetRangeDels) keeps per
// child; it is kept apart from child, so that a merge without tombstones
// (compaction, and most reads) does not carry it.
type childDels struct {
	// lists are the range tombstones that apply to the child's entries:
	// those of every child before it (the first newer of them), then its
	// own, if it has any. An entry with a seqnum at or above minSeq, the
	// lower of the snapshot and their highest seqnum, is deleted by none
	// of them.
	lists  []*rangedel.List
	minSeq base.SeqNum
	// ext, once extValid, is the last key range looked up in lists: the
	// highest seqnum of a visible tombstone covering its keys is ext.Seq
	// for all of them. A child's keys move in small steps, so most of its
	// entries cost two comparisons instead of a search of every list.
	// newerSeq is the same answer from the newer children's lists alone:
	// when it deletes an entry, it deletes every entry of this child and
	// of the older ones over the whole of ext, so the merge seeks past ext
	// instead of stepping (skipDeleted).
	ext      rangedel.Extent
	newerSeq base.SeqNum
	newer    int32
	extValid bool
}

// own returns the child's own range tombstones, nil when it has none.
func (d *childDels) own() *rangedel.List {
	if int(d.newer) < len(d.lists) {
		return d.lists[d.newer]
	}
	return nil
}

// Iter merges any number of internal iterators into one, in internal-key
// order. Entries with equal internal keys in several children are all
// returned, the child passed first to New coming first.
type Iter struct {
	cmp      base.Compare
	children []child
	// heap holds the valid children: a min-heap in forward mode, a max-heap in
	// reverse mode; heap[0] is the current entry.
	heap []*child
	err  error
	// twoPhase makes SeekGE, First, SeekLT and Last prepare every child before
	// positioning any, then call submit if set (SetTwoPhase); ordered
	// lets range tombstones be jumped past (SetChildrenOrdered). (The
	// bools sit together, so that the struct stays in its size class.)
	reverse  bool
	twoPhase bool
	ordered  bool
	// bytewise says cmp is bytes.Compare, which less then calls directly
	// (base.IsBytesCompare).
	bytewise bool
	submit   func()
	// dels, when range tombstones are applied (SetRangeDels), holds them
	// for each child, by child index; snapshot is the reader's seqnum.
	dels     []childDels
	snapshot base.SeqNum
	// rangeDelReseeks counts the child seeks made to jump past entries a
	// newer child's range tombstone deletes (RangeDelReseeks).
	rangeDelReseeks uint64
	// inPrefix is set by SeekPrefixGE and cleared by every other absolute
	// positioning call and by turning backward: while it is set, the
	// merge looks for the entries of prefix only, and a child that is not
	// valid may still hold entries past the current one (SeekPrefixGE).
	// turnKey holds the current key while turn repositions such children.
	inPrefix    bool
	prefix      []byte
	turnKey     []byte
	turnTrailer uint64
}

var (
	_ base.InternalIterator = (*Iter)(nil)
	_ base.InternalSeeker   = (*Iter)(nil)
	_ base.PrefixSeeker     = (*Iter)(nil)
)

// New returns an iterator merging iters, ordered by cmp on user keys. The
// merged iterator takes ownership of iters: Close closes them.
func New(cmp base.Compare, iters ...base.InternalIterator) *Iter {
	m := &Iter{
		cmp:      cmp,
		bytewise: base.IsBytesCompare(cmp),
		children: make([]child, len(iters)),
		heap:     make([]*child, 0, len(iters)),
	}
	for i, it := range iters {
		m.children[i] = child{iter: it, index: i}
		m.children[i].prep, _ = it.(base.SeekPreparer)
		m.children[i].pseek, _ = it.(base.PrefixSeeker)
		m.children[i].pprep, _ = it.(base.PrefixSeekPreparer)
	}
	return m
}

// SetTwoPhase turns two-phase seeks on or off (default off). With them,
// SeekGE, First, SeekLT and Last first call PrepareSeekGE (PrepareFirst,
// PrepareSeekLT, PrepareLast) on every child
// that is a base.SeekPreparer, then submit (when not nil: it sends the
// reads the children queued as one batch), so the reads of all children
// are in flight together, and only then position each child, which waits
// for its own.
func (m *Iter) SetTwoPhase(on bool, submit func()) { m.twoPhase, m.submit = on, submit }

// SetChildrenOrdered(true) promises what the sources of one DB read
// guarantee: for one user key, every entry and range tombstone of a child
// has a higher seqnum than every entry of the children after it. A range
// tombstone of one child that a reader sees then deletes every entry of
// the later children over its keys, and the merge, when such a tombstone
// deletes the entry at the top of the heap, seeks the entry's child and the
// later ones past the tombstone instead of stepping through what it
// deletes (RangeDelReseeks counts the seeks), as RocksDB's and Pebble's
// merging iterators do under the same invariant. Without the promise (the
// default) a tombstone deletes exactly the entries below its seqnum, one
// by one, whatever the children hold.
func (m *Iter) SetChildrenOrdered(on bool) { m.ordered = on }

// SetRangeDels makes the iterator skip the entries that range tombstones
// delete for a reader at snapshot, applying them level by level: dels[i]
// holds the tombstones of child i (nil for none), and an entry of child i is
// skipped when a tombstone of child i or of a child before it, with a
// seqnum at most snapshot, covers the entry's user key at a higher seqnum.
// Tombstones of later children are not consulted for it.
//
// This is exact when children come newest first, as the sources of one
// read do (memtables, L0 files, then one LevelIter per level): for one user
// key, every entry of a child is newer than those of the children after it,
// so a tombstone of a later child never has a higher seqnum than an entry
// of an earlier one. A reader then sees what applying every tombstone to
// every entry would show, and what Get decides, source by source.
//
// Call it before the first positioning call. Without it (the default), or
// with no tombstones at all, every entry is returned, as compaction needs.
// Deleted entries are stepped over one by one unless SetChildrenOrdered
// allows jumps.
func (m *Iter) SetRangeDels(snapshot base.SeqNum, dels []*rangedel.List) {
	if len(dels) != len(m.children) {
		base.AssertionFailedf("mergeiter: SetRangeDels with %d lists for %d children", len(dels), len(m.children))
	}
	var all []*rangedel.List
	var maxSeq base.SeqNum
	cd := make([]childDels, len(m.children))
	for i := range cd {
		newer := int32(len(all))
		if l := dels[i]; !l.Empty() {
			all = append(all, l)
			maxSeq = max(maxSeq, l.MaxSeq())
		}
		cd[i] = childDels{lists: all[:len(all):len(all)], newer: newer, minSeq: min(maxSeq, snapshot)}
	}
	m.dels, m.snapshot = nil, snapshot
	if len(all) > 0 {
		m.dels = cd
	}
}

// deleted reports whether a range tombstone that applies to c deletes its
// current entry.
func (m *Iter) deleted(c *child) bool {
	d := &m.dels[c.index]
	seq := c.key.SeqNum()
	if seq >= d.minSeq {
		return false
	}
	if key := c.key.UserKey; !d.extValid || !d.ext.Contains(m.cmp, key) {
		d.ext = rangedel.Extent{NoStart: true, NoEnd: true}
		for _, l := range d.lists[:d.newer] {
			e := l.ExtentAt(key, m.snapshot)
			d.ext.Intersect(m.cmp, &e)
		}
		d.newerSeq = d.ext.Seq
		if own := d.own(); own != nil {
			e := own.ExtentAt(key, m.snapshot)
			d.ext.Intersect(m.cmp, &e)
		}
		d.extValid = true
	}
	return seq < d.ext.Seq
}

// skipDeleted moves on from the entries that range tombstones delete
// (SetRangeDels), in the current direction, after a positioning that
// returned ok; it reports whether the iterator is at an entry. An entry
// deleted by a tombstone of its own child is stepped past; with ordered
// children (SetChildrenOrdered), one deleted by a newer child's tombstone
// is jumped past with the rest of what that tombstone deletes (seekPast).
// Either way only deleted entries are passed over, so the children
// invariant holds for the entries that are not deleted, which are all the
// merge returns.
func (m *Iter) skipDeleted(ok bool) bool {
	if m.dels == nil {
		return ok
	}
	for ok && m.deleted(m.heap[0]) {
		top := m.heap[0]
		if d := &m.dels[top.index]; m.ordered && d.newerSeq > top.key.SeqNum() {
			if edge, bounded := d.ext.Edge(m.reverse); bounded {
				ok = m.seekPast(top.index, edge)
				continue
			}
		}
		if m.reverse {
			ok = m.step(top.iter.Prev())
		} else {
			ok = m.step(top.iter.Next())
		}
	}
	return ok
}

// seekPast moves children from..., whose entries short of the user key
// target (shortOf) a newer child's range tombstone deletes from the current
// entry on, past them: to their first entry at or after target, or in
// reverse their last before it; then it rebuilds the heap. A child already
// past is left where it is. The jump cascades, as RocksDB's: a tombstone of
// one of these children covering target deletes the entries of the older
// children beyond it too, up to the tombstone's edge in the direction of
// the jump.
func (m *Iter) seekPast(from int, target []byte) bool {
	for j := from; j < len(m.children); j++ {
		c := &m.children[j]
		if c.valid && m.shortOf(c.key.UserKey, target) {
			m.rangeDelReseeks++
			switch {
			case m.reverse:
				m.reposition(c, c.iter.SeekLT(target))
			case m.inPrefix:
				// target is past the prefix seek's key, as SeekPrefixGE
				// wants.
				m.reposition(c, m.seekPrefix(c, target))
			default:
				m.reposition(c, c.iter.SeekGE(target))
			}
		}
		if l := m.dels[j].own(); l != nil {
			if e := l.ExtentAt(target, m.snapshot); e.Seq > 0 {
				if edge, bounded := e.Edge(m.reverse); bounded {
					target = edge
				}
			}
		}
	}
	return m.rebuild()
}

// shortOf reports whether user key k falls short of target, where
// seekPast moves a child to: k < target, or in reverse k >= target (a
// tombstone's start, the first key it deletes).
func (m *Iter) shortOf(k, target []byte) bool {
	if m.reverse {
		return m.cmp(k, target) >= 0
	}
	return m.cmp(k, target) < 0
}

// reposition records the outcome of moving c, which is not in a heap being
// built: its key, or that it ran out (with its error, if any).
func (m *Iter) reposition(c *child, ok bool) {
	if ok {
		c.key = c.iter.Key()
		return
	}
	c.valid = false
	if err := c.iter.Error(); err != nil && m.err == nil {
		m.err = err
	}
}

// rebuild remakes the heap from the valid children, after seekPast moved
// some of them.
func (m *Iter) rebuild() bool {
	m.heap = m.heap[:0]
	for i := range m.children {
		if c := &m.children[i]; c.valid {
			m.heap = append(m.heap, c)
		}
	}
	return m.build()
}

// RangeDelReseeks returns how many times a child was sought past entries
// that a newer child's range tombstone deletes (RocksDB's
// internal_range_del_reseek_count): once per child moved by each jump.
func (m *Iter) RangeDelReseeks() uint64 { return m.rangeDelReseeks }

// prepared ends the first phase.
func (m *Iter) prepared() {
	if m.submit != nil {
		m.submit()
	}
}

// less orders heap entries: by internal key, then by child index, reversed in
// reverse mode.
func (m *Iter) less(a, b *child) bool {
	var c int
	if m.bytewise {
		c = bytes.Compare(a.key.UserKey, b.key.UserKey)
	} else {
		c = m.cmp(a.key.UserKey, b.key.UserKey)
	}
	if c == 0 {
		if a.key.Trailer != b.key.Trailer {
			// The newer entry (the higher trailer) first.
			return (a.key.Trailer > b.key.Trailer) != m.reverse
		}
		c = a.index - b.index
	}
	return (c < 0) != m.reverse
}

func (m *Iter) down(i int) {
	h := m.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && m.less(h[r], h[l]) {
			j = r
		}
		if !m.less(h[j], h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

// add records the outcome of positioning c: a positioned child joins the
// heap, an exhausted one is left out, a failed one records the error.
func (m *Iter) add(c *child, ok bool) {
	if ok {
		c.valid = true
		c.key = c.iter.Key()
		m.heap = append(m.heap, c)
		return
	}
	c.valid = false
	if err := c.iter.Error(); err != nil && m.err == nil {
		m.err = err
	}
}

// build heapifies after every child has been positioned.
func (m *Iter) build() bool {
	if m.err != nil {
		m.heap = m.heap[:0]
		return false
	}
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
	return len(m.heap) > 0
}

func (m *Iter) reset(reverse bool) {
	m.err = nil
	m.reverse = reverse
	m.heap = m.heap[:0]
	m.inPrefix = false
}

// seekPrefix seeks c to key for the entries of the prefix of SeekPrefixGE.
func (m *Iter) seekPrefix(c *child, key []byte) bool {
	if c.pseek != nil {
		return c.pseek.SeekPrefixGE(m.prefix, key)
	}
	return c.iter.SeekGE(key)
}

// SeekPrefixGE is SeekGE(key) for a reader that wants only the entries
// whose user keys have prefix, as key does (base.PrefixSeeker, Pebble's
// SeekPrefixGE): each child that is a base.PrefixSeeker is sought with it,
// so one that holds no such entry (its prefix filter, or a level's file
// bounds, say so) drops out without a read, also from the first phase of
// a two-phase seek. Entries of other prefixes may follow those of prefix;
// the caller stops at the first. Until the next absolute positioning call,
// the merge stays in prefix mode: forward moves (Next, SeekGEInternal, the
// jumps past range tombstones) leave the dropped children out, and a turn
// backward first repositions them at the current entry, after which the
// merge is in total order again.
func (m *Iter) SeekPrefixGE(prefix, key []byte) bool {
	m.reset(false)
	m.inPrefix, m.prefix = true, append(m.prefix[:0], prefix...)
	if m.twoPhase {
		for i := range m.children {
			switch c := &m.children[i]; {
			case c.pprep != nil:
				c.pprep.PrepareSeekPrefixGE(prefix, key)
			case c.prep != nil:
				c.prep.PrepareSeekGE(key)
			}
		}
		m.prepared()
	}
	for i := range m.children {
		c := &m.children[i]
		m.add(c, m.seekPrefix(c, key))
	}
	return m.skipDeleted(m.build())
}

// SeekGE positions at the first entry whose user key is >= key.
func (m *Iter) SeekGE(key []byte) bool {
	m.reset(false)
	if m.twoPhase {
		for i := range m.children {
			if p := m.children[i].prep; p != nil {
				p.PrepareSeekGE(key)
			}
		}
		m.prepared()
	}
	for i := range m.children {
		c := &m.children[i]
		m.add(c, c.iter.SeekGE(key))
	}
	return m.skipDeleted(m.build())
}

// SeekGEInternal positions at the first entry at or after key in
// internal-key order: every child is sought there (base.SeekGEInternal).
//
// In prefix mode (SeekPrefixGE) it is a seek within the prefix seek, which
// the DB iterator makes forward past a run of versions, and key must not
// sort before the current entry: the children not valid hold no entry of
// the prefix from where they stopped on, and are left out.
func (m *Iter) SeekGEInternal(key base.InternalKey) bool {
	inPrefix := m.inPrefix
	m.reset(false)
	m.inPrefix = inPrefix
	for i := range m.children {
		c := &m.children[i]
		if inPrefix && !c.valid {
			continue
		}
		m.add(c, base.SeekGEInternal(c.iter, m.cmp, key))
	}
	return m.skipDeleted(m.build())
}

// SeekLT positions at the last entry whose user key is < key.
func (m *Iter) SeekLT(key []byte) bool {
	m.reset(true)
	if m.twoPhase {
		for i := range m.children {
			if p := m.children[i].prep; p != nil {
				p.PrepareSeekLT(key)
			}
		}
		m.prepared()
	}
	for i := range m.children {
		c := &m.children[i]
		m.add(c, c.iter.SeekLT(key))
	}
	return m.skipDeleted(m.build())
}

// First positions at the first entry.
func (m *Iter) First() bool {
	m.reset(false)
	if m.twoPhase {
		for i := range m.children {
			if p := m.children[i].prep; p != nil {
				p.PrepareFirst()
			}
		}
		m.prepared()
	}
	for i := range m.children {
		c := &m.children[i]
		m.add(c, c.iter.First())
	}
	return m.skipDeleted(m.build())
}

// Last positions at the last entry.
func (m *Iter) Last() bool {
	m.reset(true)
	if m.twoPhase {
		for i := range m.children {
			if p := m.children[i].prep; p != nil {
				p.PrepareLast()
			}
		}
		m.prepared()
	}
	for i := range m.children {
		c := &m.children[i]
		m.add(c, c.iter.Last())
	}
	return m.skipDeleted(m.build())
}

// step moves the current child one entry in the current direction and
// restores the heap.
func (m *Iter) step(ok bool) bool {
	top := m.heap[0]
	if ok {
		top.key = top.iter.Key()
		m.down(0)
		return true
	}
	top.valid = false
	if err := top.iter.Error(); err != nil {
		m.err = err
		m.heap = m.heap[:0]
		return false
	}
	n := len(m.heap) - 1
	m.heap[0] = m.heap[n]
	m.heap[n] = nil
	m.heap = m.heap[:n]
	if n == 0 {
		return false
	}
	m.down(0)
	return true
}

// Next moves to the next entry.
func (m *Iter) Next() bool {
	if len(m.heap) == 0 {
		return false
	}
	if m.reverse {
		return m.skipDeleted(m.turn(false))
	}
	if m.dels == nil {
		// Without range tombstones (compaction, most reads) there is
		// nothing to skip: no call on the path of every step.
		return m.step(m.heap[0].iter.Next())
	}
	return m.skipDeleted(m.step(m.heap[0].iter.Next()))
}

// Prev moves to the previous entry.
func (m *Iter) Prev() bool {
	if len(m.heap) == 0 {
		return false
	}
	if !m.reverse {
		return m.skipDeleted(m.turn(true))
	}
	return m.skipDeleted(m.step(m.heap[0].iter.Prev()))
}

// turn rebuilds the heap for the other direction (reverse or not) at the
// current entry. By the child invariant, a valid child's next entry in the
// new direction is the first one past the current entry, and every entry
// of an exhausted child lies past it: a valid child steps once, an
// exhausted one starts again from its end.
//
// In prefix mode the invariant holds only for the entries of the prefix:
// a child may have passed over others (a LevelIter a file its filter
// ruled out, an invalid child all of them), so turning backward seeks
// every child to the current entry and steps back from there.
func (m *Iter) turn(reverse bool) bool {
	inPrefix := m.inPrefix
	if inPrefix && reverse {
		cur := m.heap[0].key
		m.turnKey = append(m.turnKey[:0], cur.UserKey...)
		m.turnTrailer = cur.Trailer
	}
	m.reset(reverse)
	for i := range m.children {
		c := &m.children[i]
		var ok bool
		switch {
		case reverse && inPrefix:
			ok = m.before(c)
		case c.valid && reverse:
			ok = c.iter.Prev()
		case c.valid:
			ok = c.iter.Next()
		case reverse:
			ok = c.iter.Last()
		default:
			ok = c.iter.First()
		}
		m.add(c, ok)
	}
	return m.build()
}

// before positions c at its last entry before the entry (turnKey,
// turnTrailer) the merge was at when it turned backward in prefix mode.
// (An entry of c equal to that one would be left after it: the sources of
// a DB read never hold one internal key twice.)
func (m *Iter) before(c *child) bool {
	ok := base.SeekGEInternal(c.iter, m.cmp, base.InternalKey{UserKey: m.turnKey, Trailer: m.turnTrailer})
	if ok {
		return c.iter.Prev()
	}
	if c.iter.Error() != nil {
		return false
	}
	return c.iter.Last()
}

// Key returns the current entry's internal key; the zero key when the
// iterator is not positioned.
func (m *Iter) Key() base.InternalKey {
	if len(m.heap) == 0 {
		return base.InternalKey{}
	}
	return m.heap[0].key
}

// Value returns the current entry's value; nil when not positioned.
func (m *Iter) Value() []byte {
	if len(m.heap) == 0 {
		return nil
	}
	return m.heap[0].iter.Value()
}

// Error returns the first error a child reported since the last absolute
// positioning call.
func (m *Iter) Error() error { return m.err }

// Close closes every child and returns the first error: the iteration error
// if any, else the first error from a child's Close.
func (m *Iter) Close() error {
	err := m.err
	for i := range m.children {
		if cerr := m.children[i].iter.Close(); cerr != nil && err == nil {
			err = cerr
		}
		m.children[i].valid = false
	}
	m.heap = m.heap[:0]
	return err
}
