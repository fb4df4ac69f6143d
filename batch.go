package shale

import (
	"encoding/binary"
	"sync"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/memtable"
)

// batchHeaderLen is the size of a batch's header: seqnum (8 bytes LE) and
// entry count (4 bytes LE), as RocksDB's WriteBatch.
const batchHeaderLen = 12

// minBatchEntryLen is the fewest bytes an entry of an encoded batch takes:
// its kind and the varint length of an empty key.
const minBatchEntryLen = 2

// Batch is a set of writes applied atomically by DB.Write. Its encoding is the
// WAL record: header, then per entry a kind byte, the varint-prefixed key and,
// for Set / RangeDelete (end key) / Merge / BlobIndex, the varint-prefixed value.
// A Batch is not safe for concurrent use.
type Batch struct {
	data  []byte
	count uint32
	// memBytes estimates the memtable space the batch needs.
	memBytes int
	// tombstones is set once the batch holds a Delete, SingleDelete or
	// DeleteRange: its commit dates the memtable's oldest tombstone.
	tombstones bool
	// merges is set once the batch holds a Merge: its Write first checks
	// (and records) the merge operator.
	merges bool
	// maxSetValue is the length of the batch's largest Set value:
	// write-time separation looks into the batch only when it reaches
	// MinBlobSize.
	maxSetValue int64
	// commit is the batch's place in the commit queue, reused by every
	// Write of the batch (a batch is written by one goroutine at a time).
	commit writer
}

// batchPool recycles the one-entry batches of Put, Delete and friends.
var batchPool = sync.Pool{New: func() any { return newBatch() }}

// maxPooledBatch keeps batches that grew large out of the pool.
const maxPooledBatch = 64 << 10

func getBatch() *Batch {
	b := batchPool.Get().(*Batch)
	b.Reset()
	return b
}

func putBatch(b *Batch) {
	if cap(b.data) <= maxPooledBatch {
		batchPool.Put(b)
	}
}

// NewBatch returns an empty batch.
func (d *DB) NewBatch() *Batch { return newBatch() }

func newBatch() *Batch {
	return &Batch{data: make([]byte, batchHeaderLen, 256)}
}

func (b *Batch) init() {
	if len(b.data) < batchHeaderLen {
		b.data = append(b.data[:0], make([]byte, batchHeaderLen)...)
	}
}

// memtableEntryOverhead approximates a skiplist node's fixed cost (for
// recovery's sizing; batches use memtable.EntrySizeBound).
const memtableEntryOverhead = 128

func (b *Batch) add(kind base.Kind, key, value []byte, hasValue bool) {
	b.init()
	b.data = append(b.data, byte(kind))
	b.data = binary.AppendUvarint(b.data, uint64(len(key)))
	b.data = append(b.data, key...)
	if hasValue {
		b.data = binary.AppendUvarint(b.data, uint64(len(value)))
		b.data = append(b.data, value...)
	}
	b.count++
	b.memBytes += memtable.EntrySizeBound(len(key), len(value))
	b.tombstones = b.tombstones || isTombstone(kind)
	b.merges = b.merges || kind == base.KindMerge
	if kind == base.KindSet {
		b.maxSetValue = max(b.maxSetValue, int64(len(value)))
	}
}

// isTombstone reports whether kind deletes (Delete, SingleDelete,
// RangeDelete).
func isTombstone(kind base.Kind) bool {
	return kind == base.KindDelete || kind == base.KindSingleDelete || kind == base.KindRangeDelete
}

// Put adds a Set of key to value.
func (b *Batch) Put(key, value []byte) { b.add(base.KindSet, key, value, true) }

// Delete adds a tombstone for key.
func (b *Batch) Delete(key []byte) { b.add(base.KindDelete, key, nil, false) }

// SingleDelete adds a single-delete tombstone: it removes a key that was Put
// exactly once since its last delete; results are undefined otherwise, as in RocksDB.
func (b *Batch) SingleDelete(key []byte) { b.add(base.KindSingleDelete, key, nil, false) }

// DeleteRange deletes every key in [start, end).
func (b *Batch) DeleteRange(start, end []byte) { b.add(base.KindRangeDelete, start, end, true) }

// Len returns the number of entries in the batch.
func (b *Batch) Len() int { return int(b.count) }

// Reset empties the batch, keeping its buffer.
func (b *Batch) Reset() {
	b.data = b.data[:0]
	b.init()
	clear(b.data)
	b.count = 0
	b.memBytes = 0
	b.tombstones = false
	b.merges = false
	b.maxSetValue = 0
}

// Empty reports whether the batch has no entries.
func (b *Batch) Empty() bool { return b.count == 0 }

// Size returns the encoded size in bytes.
func (b *Batch) Size() int { b.init(); return len(b.data) }

// setSeqNum stamps the header before the batch is written to the WAL.
func (b *Batch) setSeqNum(seq base.SeqNum) {
	b.init()
	binary.LittleEndian.PutUint64(b.data[0:8], uint64(seq))
	binary.LittleEndian.PutUint32(b.data[8:12], b.count)
}

// batchReader decodes an encoded batch; it never panics on damaged input.
type batchReader struct {
	data  []byte
	seq   base.SeqNum
	count uint32
	read  uint32
}

func newBatchReader(data []byte) (batchReader, bool) {
	if len(data) < batchHeaderLen {
		return batchReader{}, false
	}
	return batchReader{
		data:  data[batchHeaderLen:],
		seq:   base.SeqNum(binary.LittleEndian.Uint64(data[0:8])),
		count: binary.LittleEndian.Uint32(data[8:12]),
	}, true
}

// walBatch reads the header of rec, the WAL record at offset off of the WAL
// at path, and checks that the count it claims fits in its bytes, before
// the count sizes a memtable: a record that claims 2^32 entries would
// otherwise reserve 4 GiB. Open's recovery and Check judge WAL records by
// it; the entries are checked as they are read.
func walBatch(path string, off int64, rec []byte) (batchReader, error) {
	r, ok := newBatchReader(rec)
	if !ok {
		return r, base.CorruptionErrorf(path, off, "WAL record of %d bytes is shorter than a batch header", len(rec))
	}
	if uint64(r.count) > uint64(len(rec)-batchHeaderLen)/minBatchEntryLen {
		return r, base.CorruptionErrorf(path, off, "WAL batch at seqnum %d claims %d entries in %d bytes", r.seq, r.count, len(rec))
	}
	return r, nil
}

// next returns the next entry; ok is false at the end, and err reports a
// malformed encoding (a count that does not match, a truncated entry).
func (r *batchReader) next() (kind base.Kind, key, value []byte, ok bool, malformed bool) {
	if len(r.data) == 0 {
		return 0, nil, nil, false, r.read != r.count
	}
	if r.read >= r.count {
		return 0, nil, nil, false, true
	}
	kind = base.Kind(r.data[0])
	r.data = r.data[1:]
	var okKey, okVal bool
	if key, okKey = r.readBytes(); !okKey {
		return 0, nil, nil, false, true
	}
	switch kind {
	case base.KindSet, base.KindMerge, base.KindRangeDelete, base.KindBlobIndex:
		if value, okVal = r.readBytes(); !okVal {
			return 0, nil, nil, false, true
		}
	case base.KindDelete, base.KindSingleDelete, base.KindLogData:
	default:
		return 0, nil, nil, false, true
	}
	r.read++
	return kind, key, value, true, false
}

func (r *batchReader) readBytes() ([]byte, bool) {
	n, w := binary.Uvarint(r.data)
	if w <= 0 || n > uint64(len(r.data)-w) {
		return nil, false
	}
	p := r.data[w : w+int(n)]
	r.data = r.data[w+int(n):]
	return p, true
}
