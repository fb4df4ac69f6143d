package blob

import (
	"fmt"

	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/internal/readahead"
)

// ValueReader reads values through blob indexes for one reader of a Reader
// that reads them mostly in file order: a DB iterator asked for the values
// of consecutive keys, which a flush wrote one after another. Its reads go
// through the automatic readahead of tables (from the third sequential read
// on, growing up to ReaderOptions.MaxAutoReadaheadSize), so that a scan of
// such values reads windows instead of making one read per value; a value
// away from the run is read by itself, as Get reads it. Results are Get's.
// A ValueReader is not safe for concurrent use; Close it.
type ValueReader struct {
	r   *Reader
	src block.Source
	ra  readahead.State
}

// NewValueReader returns a ValueReader of r counting its reads in stats too
// when not nil.
func (r *Reader) NewValueReader(stats *ReadStats) *ValueReader {
	return r.NewValueReaderWith(IterOptions{Stats: stats})
}

// NewValueReaderWith returns a ValueReader of r that reads as an Iterator
// with o would: o's readahead size, handle and statistics. Garbage
// collection reads the values it relocates through one, with its
// blob_compaction_readahead_size and, with direct IO for compactions, a
// direct-IO handle.
func (r *Reader) NewValueReaderWith(o IterOptions) *ValueReader {
	v := &ValueReader{r: r}
	v.src = r.sequentialSource(o, &v.ra)
	return v
}

// Get returns the value x locates, which must be the value of key, as
// Reader.GetCounted does (caching it when fillCache), from the readahead
// window when it holds the record.
func (v *ValueReader) Get(x Index, key []byte, fillCache bool) ([]byte, error) {
	r := v.r
	if err := r.checkIndex(x); err != nil {
		return nil, err
	}
	if val, ok, err := r.cached(x, key, v.src); ok || err != nil {
		return val, err
	}
	off, n := int64(x.Offset)-lengthLen, lengthLen+int(x.Size)+block.TrailerLen
	w, err := v.ra.Read(off, n)
	r.bf.TakeReadahead(v.src, &v.ra)
	if err != nil {
		return nil, fmt.Errorf("shale: reading ahead in %s at offset %d: %w", r.bf.Name(), off, err)
	}
	if w != nil {
		return r.decodeRecord(x, key, w, true, fillCache, v.src)
	}
	rr, buf, err := r.bf.ReadRange(v.src, off, n)
	if err != nil {
		return nil, err
	}
	val, err := r.decodeRecord(x, key, buf, rr.Pooled(), fillCache, v.src)
	rr.Release()
	return val, err
}

// Close releases the readahead memory, waiting for reads in flight.
func (v *ValueReader) Close() {
	v.r.bf.AddReadahead(v.src, v.ra.Release())
}
