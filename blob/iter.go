package blob

import (
	"encoding/binary"
	"fmt"

	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/internal/readahead"
	"github.com/shaledb/shale/vfs"
)

// IterOptions configure an Iterator.
type IterOptions struct {
	// ReadaheadSize > 0 reads ahead this many bytes past each record read
	// from the file, from the first (RocksDB's
	// blob_compaction_readahead_size); 0 reads ahead automatically, from
	// the third read on, up to ReaderOptions.MaxAutoReadaheadSize; negative
	// never reads ahead.
	ReadaheadSize int64
	// File, when set, is another open handle of the same file that the
	// iterator reads (a direct-IO handle for garbage collection, so it
	// bypasses the page cache); the caller keeps it open until Close.
	File vfs.File
	// Async double-buffers the readahead: the next window is read in the
	// background through ReaderOptions.AsyncReader while the current one is
	// consumed. Without an AsyncReader it changes nothing.
	Async bool
	// Stats, when set, also receives the counts of the iterator's reads.
	Stats *ReadStats
}

// Iterator reads every record of a blob file in file order, for garbage
// collection to relocate the live values. It neither consults nor fills
// the block cache. It is not safe for concurrent use.
type Iterator struct {
	r   *Reader
	src block.Source
	ra  readahead.State
	// off is where the next record starts.
	off        uint64
	key, value []byte
	x          Index
	err        error
	// count and values add up the records read, checked against the footer
	// at the end.
	count, values uint64
	done          bool
	lenBuf        [lengthLen]byte
	// nextLen is the length of the record at off when haveLen: the read
	// of the record before fetched it.
	nextLen uint32
	haveLen bool
}

// NewIter returns an Iterator positioned before the first record.
func (r *Reader) NewIter(o IterOptions) *Iterator {
	it := &Iterator{r: r, off: HeaderLen}
	it.src = r.sequentialSource(o, &it.ra)
	return it
}

// sequentialSource returns the source a reader in file order reads through
// with o (the reader's file, or o.File), with ra set up for o's readahead.
func (r *Reader) sequentialSource(o IterOptions, ra *readahead.State) block.Source {
	src := r.bf.Source()
	if o.File != nil {
		src = block.Source{File: o.File, Align: fileAlignment(o.File)}
	}
	src.Stats = o.Stats
	cfg := readahead.Config{
		Limit:     int64(r.footOff),
		Alignment: src.Align,
		Reader:    r.bf.AsyncReader(),
		MaxAuto:   r.maxAuto,
		Async:     o.Async,
	}
	switch {
	case o.ReadaheadSize > 0:
		cfg.Size = o.ReadaheadSize
	case o.ReadaheadSize < 0:
		cfg.MaxAuto = -1
	}
	ra.Init(src.File, cfg)
	return src
}

// Next moves to the next record and reports whether there is one. At the
// end of the records it checks the footer's count and value bytes; a
// mismatch, like any damage, stops the iterator with a corruption error
// (Error).
func (it *Iterator) Next() bool {
	if it.done {
		return false
	}
	ok, err := it.next()
	it.r.bf.TakeReadahead(it.src, &it.ra)
	if err != nil {
		it.err = err
	}
	if !ok {
		it.done = true
		it.key, it.value, it.x = nil, nil, Index{}
	}
	return ok
}

func (it *Iterator) next() (bool, error) {
	r := it.r
	if it.off == r.footOff {
		p := r.props
		if it.count != p.Count || it.values != p.ValueBytes {
			return false, r.bf.Corruptf(block.Handle{Offset: r.footOff}, "footer counts %d blobs of %d bytes, the file holds %d of %d",
				p.Count, p.ValueBytes, it.count, it.values)
		}
		return false, nil
	}
	if r.footOff-it.off < minRecordLen {
		return false, r.bf.Corruptf(block.Handle{Offset: it.off}, "%d bytes before the footer are too short for a record", r.footOff-it.off)
	}
	n := it.nextLen
	if !it.haveLen {
		lb, err := it.read(it.off, lengthLen, it.lenBuf[:])
		if err != nil {
			return false, err
		}
		n = binary.LittleEndian.Uint32(lb)
	}
	it.haveLen = false
	h := block.Handle{Offset: it.off + lengthLen, Length: uint64(n)}
	if err := r.bf.CheckHandle(h, r.footOff); err != nil {
		return false, err
	}
	// The read of a block also fetches the next record's length, unless
	// the block is the last: one read per record, not two.
	total := int(h.Length) + block.TrailerLen
	span := total
	if h.End()+lengthLen <= r.footOff {
		span += lengthLen
	}
	blk, release, shared, err := it.readSpan(h.Offset, span)
	if err != nil {
		return false, err
	}
	defer release()
	if span > total {
		it.nextLen, it.haveLen = binary.LittleEndian.Uint32(blk[total:]), true
		blk = blk[:total]
	}
	contents, err := r.bf.DecodeBlock(h, blk, shared, it.src)
	if err != nil {
		return false, err
	}
	// The checksum covers the type byte, which DecodeBlock knew.
	c, ok := compressionOf(blk[h.Length])
	if !ok {
		return false, r.bf.Corruptf(h, "unknown compression type %d", blk[h.Length])
	}
	k, v, err := r.splitContents(h, contents)
	if err != nil {
		return false, err
	}
	it.key, it.value = k, v
	it.x = Index{FileNum: r.fileNum, Offset: h.Offset, Size: h.Length, Compression: c}
	it.off = h.End()
	it.count++
	it.values += uint64(len(v))
	return true, nil
}

// read returns the n bytes at off: from the readahead window when it
// serves them, else read into buf.
func (it *Iterator) read(off uint64, n int, buf []byte) ([]byte, error) {
	w, err := it.ra.Read(int64(off), n)
	if err != nil {
		return nil, fmt.Errorf("shale: reading ahead in %s at offset %d: %w", it.r.bf.Name(), off, err)
	}
	if w != nil {
		return w, nil
	}
	if err := it.r.bf.ReadAt(it.src, buf[:n], int64(off)); err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// readSpan reads the n bytes at off (a block with its trailer, and maybe
// the next record's length): from the readahead window, or by a read of
// its own. shared says the bytes are in reused memory (the window, or
// pooled direct-IO memory that release gives back).
func (it *Iterator) readSpan(off uint64, n int) (b []byte, release func(), shared bool, err error) {
	w, err := it.ra.Read(int64(off), n)
	if err != nil {
		return nil, nil, false, fmt.Errorf("shale: reading ahead in %s at offset %d: %w", it.r.bf.Name(), off, err)
	}
	if w != nil {
		return w, func() {}, true, nil
	}
	rr, b, err := it.r.bf.ReadRange(it.src, int64(off), n)
	if err != nil {
		return nil, nil, false, err
	}
	return b, rr.Release, rr.Pooled(), nil
}

// Key returns the current record's user key, Value its value and Index its
// blob index. They never alias memory the iterator reuses: they stay valid
// after Next and Close, and must not be modified.
func (it *Iterator) Key() []byte { return it.key }

// Value returns the current record's value.
func (it *Iterator) Value() []byte { return it.value }

// Index returns the blob index of the current record (with
// ReaderOptions.FileNum as its file number).
func (it *Iterator) Index() Index { return it.x }

// Error returns the error that stopped the iterator, if any.
func (it *Iterator) Error() error { return it.err }

// Close releases the readahead memory (waiting for reads in flight) and
// returns the iterator's error.
func (it *Iterator) Close() error {
	it.r.bf.AddReadahead(it.src, it.ra.Release())
	it.done = true
	return it.err
}
