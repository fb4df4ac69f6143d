package dbiter

import "github.com/shaledb/shale/internal/base"

// mergeState holds the operands and the base of the key being merged
// (Options.Merge). The base value itself is in Iter.valBuf.
type mergeState struct {
	buf []byte
	ops []mergeOp
	// newestFirst says the operands arrived newest first (gathered going
	// forward) rather than oldest first (going backward).
	newestFirst bool
	// hasBase says a value (of baseKind, at baseSeq) is under the
	// operands; the range and secondary tombstones are applied to it by
	// mergeValue.
	hasBase  bool
	baseSeq  base.SeqNum
	baseKind base.Kind
	out      [][]byte
}

// mergeOp is one operand: its seqnum and where its copy ends in buf.
type mergeOp struct {
	seq base.SeqNum
	end int
}

// reset empties the state for operands arriving in the given order.
func (m *mergeState) reset(newestFirst bool) {
	m.buf, m.ops = m.buf[:0], m.ops[:0]
	m.newestFirst, m.hasBase = newestFirst, false
}

// add copies an operand.
func (m *mergeState) add(value []byte, seq base.SeqNum) {
	m.buf = append(m.buf, value...)
	m.ops = append(m.ops, mergeOp{seq: seq, end: len(m.buf)})
}

// setBase records the entry under the operands (going backward, an entry
// newer than every operand so far, which are then dropped): a value at
// seq of kind when hasBase, else a tombstone.
func (m *mergeState) setBase(hasBase bool, seq base.SeqNum, kind base.Kind) {
	if !m.newestFirst {
		m.buf, m.ops = m.buf[:0], m.ops[:0]
	}
	m.hasBase, m.baseSeq, m.baseKind = hasBase, seq, kind
}

// newest returns the index in ops of the j-th newest operand.
func (m *mergeState) newest(j int) int {
	if m.newestFirst {
		return j
	}
	return len(m.ops) - 1 - j
}

// operand returns operand x of ops.
func (m *mergeState) operand(x int) []byte {
	start := 0
	if x > 0 {
		start = m.ops[x-1].end
	}
	end := m.ops[x].end
	return m.buf[start:end:end]
}

// oldestFirst returns the newest n operands, oldest first.
func (m *mergeState) oldestFirst(n int) [][]byte {
	m.out = m.out[:0]
	for j := n - 1; j >= 0; j-- {
		m.out = append(m.out, m.operand(m.newest(j)))
	}
	return m.out
}

// gatherForward gathers the operands of keyBuf from its newest visible
// entry, a Merge at the child, going forward until the entry under them:
// a value (the base, copied into valBuf) or a tombstone, where it leaves
// the child, or a later key's entry. ok says the child is at an entry
// (false: exhausted, or failed when it reports an error).
func (i *Iter) gatherForward() (ok bool, err error) {
	m := &i.merge
	m.reset(true)
	m.add(i.it.Value(), i.it.Key().SeqNum())
	for ok = i.it.Next(); ok; ok = i.it.Next() {
		k := i.it.Key()
		if i.cmp(k.UserKey, i.keyBuf) != 0 {
			return true, nil
		}
		switch kd := k.Kind(); kd {
		case base.KindMerge:
			m.add(i.it.Value(), k.SeqNum())
		case base.KindSet, base.KindBlobIndex:
			i.valBuf = append(i.valBuf[:0], i.it.Value()...)
			m.setBase(true, k.SeqNum(), kd)
			return true, nil
		case base.KindDelete, base.KindSingleDelete:
			return true, nil
		case base.KindRangeDelete, base.KindLogData:
		default:
			return false, badKind(k)
		}
	}
	return false, nil
}

// mergeValue merges the gathered operands of keyBuf, whose newest one no
// range tombstone deletes: the operands down to the first one a range
// tombstone deletes (which deletes every older entry too), onto the base
// when there is one and no tombstone deletes it.
func (i *Iter) mergeValue() ([]byte, error) {
	m := &i.merge
	snap, rd := i.opts.Snapshot, i.opts.RangeDels
	keep, cut := 0, false
	for j := range m.ops {
		if j > 0 && rd != nil && rd.Covers(i.keyBuf, m.ops[m.newest(j)].seq, snap) {
			cut = true
			break
		}
		keep++
	}
	hasBase := m.hasBase && !cut &&
		(rd == nil || !rd.Covers(i.keyBuf, m.baseSeq, snap)) &&
		(m.baseKind != base.KindSet || i.opts.Secondary == nil || !i.opts.Secondary.Deletes(i.keyBuf, i.valBuf, m.baseSeq))
	var baseValue []byte
	if hasBase {
		baseValue = i.valBuf
	}
	return i.opts.Merge(i.keyBuf, baseValue, m.baseKind, hasBase, m.oldestFirst(keep))
}

// mergeForward positions at keyBuf, whose newest visible entry, a Merge at
// the child, no tombstone deletes: its value is the merge of its operands,
// gathered going forward, and the child is left ahead (Iter.ahead).
func (i *Iter) mergeForward() bool {
	ok, err := i.gatherForward()
	if err == nil && !ok {
		err = i.it.Error()
	}
	if err != nil {
		return i.fail(err)
	}
	v, err := i.mergeValue()
	if err != nil {
		return i.fail(err)
	}
	i.key, i.value, i.kind, i.pos = i.keyBuf, v, base.KindSet, posForward
	i.ahead, i.childValid = true, ok
	return true
}
