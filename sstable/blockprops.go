package sstable

import (
	"encoding/binary"

	"github.com/shaledb/shale/internal/base"
)

// BlockProps describe one data block: a writer with WriterOptions.BlockAttr
// records them in the block's index entry, after the block handle, so that a
// compaction can drop a block whose every entry a secondary tombstone
// deletes without reading it (IterOptions.SkipBlock). Tables written
// without them (and by older writers) have none.
//
//	index entry value: block handle | entries | attributed | min | max |
//	                   min seqnum | max seqnum | continues
//
// all uvarints; attributed counts the Sets with an attribute, min and max
// bound their attributes (0 when attributed is 0), and continues is 1 when
// the block's last user key has older versions in the next block.
type BlockProps struct {
	Entries, Attributed uint64
	AttrMin, AttrMax    uint64
	MinSeq, MaxSeq      base.SeqNum
	// Continues says the next block starts with older versions of this
	// block's last user key.
	Continues bool
}

// add notes one entry.
func (p *BlockProps) add(key base.InternalKey, value []byte, attr func(key, value []byte) (uint64, bool)) {
	seq := key.SeqNum()
	if p.Entries == 0 || seq < p.MinSeq {
		p.MinSeq = seq
	}
	if p.Entries == 0 || seq > p.MaxSeq {
		p.MaxSeq = seq
	}
	p.Entries++
	if key.Kind() != base.KindSet {
		return
	}
	a, ok := attr(key.UserKey, value)
	if !ok {
		return
	}
	if p.Attributed == 0 || a < p.AttrMin {
		p.AttrMin = a
	}
	if p.Attributed == 0 || a > p.AttrMax {
		p.AttrMax = a
	}
	p.Attributed++
}

func (p *BlockProps) append(dst []byte) []byte {
	cont := uint64(0)
	if p.Continues {
		cont = 1
	}
	for _, v := range [...]uint64{p.Entries, p.Attributed, p.AttrMin, p.AttrMax, uint64(p.MinSeq), uint64(p.MaxSeq), cont} {
		dst = binary.AppendUvarint(dst, v)
	}
	return dst
}

// decodeBlockProps decodes the properties that follow a block handle in an
// index entry; ok is false unless b holds exactly one well-formed encoding.
func decodeBlockProps(b []byte) (p BlockProps, ok bool) {
	var vs [7]uint64
	for i := range vs {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return p, false
		}
		vs[i], b = v, b[n:]
	}
	p = BlockProps{Entries: vs[0], Attributed: vs[1], AttrMin: vs[2], AttrMax: vs[3],
		MinSeq: base.SeqNum(vs[4]), MaxSeq: base.SeqNum(vs[5]), Continues: vs[6] == 1}
	if len(b) != 0 || vs[6] > 1 || p.Attributed > p.Entries || p.AttrMin > p.AttrMax || p.MinSeq > p.MaxSeq || p.MaxSeq > base.SeqNumMax {
		return p, false
	}
	return p, true
}
