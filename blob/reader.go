package blob

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/vfs"
)

// ReaderOptions configure a Reader.
type ReaderOptions struct {
	// FileNum is the file's number: Get refuses an Index naming another
	// file, and the Iterator's indexes carry it. Zero checks nothing.
	FileNum base.FileNum
	// FileName names the file in errors.
	FileName string
	// Cache caches values read through Get and GetBatch; nil reads every
	// value from the file.
	Cache *cache.Cache
	// CacheID, when not zero, is the namespace of the file's values in
	// Cache (from Cache.NewID), so that a file opened again finds what it
	// cached before. Zero takes a new id.
	CacheID uint64
	// AsyncReader, when set, reads large direct-IO readahead windows of
	// iterators as concurrent parts, and their background prefetches
	// (IterOptions.Async).
	AsyncReader vfs.AsyncReader
	// Stats, when set, receives the counts of the Reader's reads; many
	// Readers may share one.
	Stats *ReadStats
	// MaxAutoReadaheadSize caps the automatic readahead of iterators.
	// Default (0) block.DefaultMaxAutoReadahead (256 KiB); negative turns
	// automatic readahead off.
	MaxAutoReadaheadSize int64
	// MmapReads maps the file read-only and reads values from the mapping
	// instead of with ReadAt; a file that cannot be mapped is read with
	// ReadAt. Values are still verified and copied out of the mapping.
	MmapReads bool
	// Unfinished opens a file still being written (the active blob file of
	// write-time separation, or one a crash left so): no footer is read and
	// Properties holds the header's fields only. Every record past the
	// header may be asked for, and each one read is verified by its
	// checksum and key as usual; one not yet written (or cut by a crash)
	// is a short read, reported as corruption. MmapReads is ignored.
	Unfinished bool
}

// Properties describe an open blob file, from its header and footer.
type Properties struct {
	// Checksum is the file's checksum type, Compression the compression its
	// writer was asked for (each value records its own).
	Checksum    ChecksumType
	Compression Compression
	// Count and ValueBytes are the footer's number of values and the sum of
	// their uncompressed lengths; FileChecksum its checksum of the bytes
	// before the footer.
	Count, ValueBytes, FileChecksum uint64
	// Size is the file size.
	Size uint64
}

// Reader reads one finished blob file. It is safe for concurrent use.
type Reader struct {
	// bf reads the file's blocks: bounds, checksums, decompression, direct
	// IO, the cache and the counters.
	bf      block.File
	fileNum base.FileNum
	// footOff is where the footer starts: every record lies in
	// [HeaderLen, footOff).
	footOff uint64
	props   Properties
	maxAuto int64
}

// fileAlignment is vfs.Alignment; tests replace it to read through a fake
// direct-IO file that checks every read is aligned.
var fileAlignment = vfs.Alignment

// NewReader opens the blob file in f, which the Reader owns from now on (it
// is closed on error too). A damaged or foreign file returns an error
// matching base.ErrCorruption, and an unfinished one also matches
// ErrNoFooter.
func NewReader(f vfs.File, o ReaderOptions) (*Reader, error) {
	r, err := newReader(f, o)
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

func newReader(f vfs.File, o ReaderOptions) (_ *Reader, err error) {
	r := &Reader{fileNum: o.FileNum, maxAuto: o.MaxAutoReadaheadSize}
	if r.maxAuto == 0 {
		r.maxAuto = block.DefaultMaxAutoReadahead
	}
	r.bf.Init(f, block.FileOptions{Name: o.FileName, Alignment: fileAlignment(f), Cache: o.Cache,
		CacheID: o.CacheID, AsyncReader: o.AsyncReader, Stats: o.Stats})
	name := r.bf.Name()
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("shale: blob file %s: %w", name, err)
	}
	if size < HeaderLen {
		// The header is the writer's first write: a crash may leave less.
		return nil, errNoFooter(name, 0, fmt.Sprintf("file of %d bytes is too short for a blob file header", size))
	}
	if o.MmapReads && !o.Unfinished && r.bf.Map(size) {
		defer func() {
			if err != nil {
				r.bf.Unmap()
			}
		}()
	}
	var hb [HeaderLen]byte
	if err := r.bf.ReadAt(r.bf.Source(), hb[:], 0); err != nil {
		return nil, err
	}
	hd, err := decodeHeader(name, hb[:])
	if err != nil {
		return nil, err
	}
	r.bf.SetChecksum(hd.checksum)
	if o.Unfinished {
		// The file grows while it is read: records are bounded by what
		// reads find, not by a footer.
		r.footOff = math.MaxInt64
		r.props = Properties{Checksum: hd.checksum, Compression: hd.compression, Size: uint64(size)}
		return r, nil
	}
	if size < HeaderLen+FooterLen {
		return nil, errNoFooter(name, size, fmt.Sprintf("file of %d bytes is too short for a footer (unfinished blob file)", size))
	}
	footOff := size - FooterLen
	var fb [FooterLen]byte
	if err := r.bf.ReadAt(r.bf.Source(), fb[:], footOff); err != nil {
		return nil, err
	}
	ft, err := decodeFooter(name, footOff, hd.checksum, fb[:])
	if err != nil {
		return nil, err
	}
	r.footOff = uint64(footOff)
	r.props = Properties{Checksum: hd.checksum, Compression: hd.compression, Count: ft.count,
		ValueBytes: ft.valueBytes, FileChecksum: ft.fileChecksum, Size: uint64(size)}
	return r, nil
}

// Properties returns what the header and footer say of the file.
func (r *Reader) Properties() Properties { return r.props }

// CacheID returns the namespace of the file's values in the cache; the
// owner passes it to Cache.EvictID when the file is deleted.
func (r *Reader) CacheID() uint64 { return r.bf.CacheID() }

// Get returns the value x locates, which must be the value of key: the
// stored key, the record length, compression and checksum are verified,
// and any mismatch is a base.CorruptionError. The value is cached when the
// Reader has a cache; it may alias cached memory and must not be modified.
func (r *Reader) Get(x Index, key []byte) ([]byte, error) {
	return r.GetCounted(x, key, true, nil)
}

// GetCounted is Get that caches the value only when fillCache, and also
// counts its reads in stats when not nil (a call's own counters).
func (r *Reader) GetCounted(x Index, key []byte, fillCache bool, stats *ReadStats) ([]byte, error) {
	if err := r.checkIndex(x); err != nil {
		return nil, err
	}
	src := r.bf.Source()
	src.Stats = stats
	if v, ok, err := r.cached(x, key, src); ok || err != nil {
		return v, err
	}
	rr, buf, err := r.bf.ReadRange(src, int64(x.Offset)-lengthLen, lengthLen+int(x.Size)+block.TrailerLen)
	if err != nil {
		return nil, err
	}
	v, err := r.decodeRecord(x, key, buf, rr.Pooled(), fillCache, src)
	rr.Release()
	return v, err
}

// AddToCache caches value as the value of key that x (returned by the
// Writer of this file) locates, without reading the file: a flush's
// prepopulation of the blob cache with what it has just written. It does
// nothing without a cache or for an index of another file.
func (r *Reader) AddToCache(x Index, key, value []byte) {
	if r.bf.Cache() == nil || r.checkIndex(x) != nil {
		return
	}
	code, _ := typeCode(x.Compression)
	contents := make([]byte, 0, uvarintLen(uint64(len(key)))+len(key)+len(value))
	contents = binary.AppendUvarint(contents, uint64(len(key)))
	contents = append(contents, key...)
	contents = append(contents, value...)
	aux := make([]byte, auxLen)
	binary.LittleEndian.PutUint32(aux, uint32(x.Size))
	aux[lengthLen] = code
	r.bf.SetCached(x.handle(), contents, aux)
}

// auxLen is the size of what is cached beside a record's contents.
const auxLen = lengthLen + 1

// checkIndex refuses an index of another file or with a compression no
// record has (an invalid argument: DecodeIndex never returns one), or one
// whose record does not lie between the header and the footer.
func (r *Reader) checkIndex(x Index) error {
	if r.fileNum != 0 && x.FileNum != r.fileNum {
		return base.InvalidArgumentf("shale: blob index of file %s given to the reader of %s (file %s)", x.FileNum, r.bf.Name(), r.fileNum)
	}
	if _, ok := typeCode(x.Compression); !ok {
		return base.InvalidArgumentf("shale: blob index with compression %s (not none, snappy or zstd)", x.Compression)
	}
	if x.Offset < HeaderLen+lengthLen {
		return r.bf.Corruptf(x.handle(), "blob index offset %d inside the file header", x.Offset)
	}
	return r.bf.CheckHandle(x.handle(), r.footOff)
}

// cached returns the value of x from the cache, if it is there (ok); a
// cached record of another key is corruption (err).
func (r *Reader) cached(x Index, key []byte, src block.Source) (v []byte, ok bool, err error) {
	b, aux, ok := r.bf.Cached(x.handle())
	if !ok {
		return nil, false, nil
	}
	r.bf.CountCacheHit(src)
	// The cold path checks the index against the record's length and
	// trailer type; a hit checks it against their copy beside the block.
	if len(aux) != auxLen || uint64(binary.LittleEndian.Uint32(aux)) != x.Size {
		return nil, true, r.bf.Corruptf(x.handle(), "cached record does not have the size blob index %s says", x)
	}
	if code, _ := typeCode(x.Compression); aux[lengthLen] != code {
		return nil, true, r.bf.Corruptf(x.handle(), "record compression type %d, blob index says %s", aux[lengthLen], x.Compression)
	}
	k, v, err := r.splitContents(x.handle(), b)
	if err != nil {
		return nil, true, err
	}
	if !bytes.Equal(k, key) {
		return nil, true, r.keyMismatch(x, k, key)
	}
	return v, true, nil
}

// decodeRecord checks the record x locates, read into buf (the length,
// the block and its trailer; in reused memory when shared), and returns
// its value, caching the contents when fillCache.
func (r *Reader) decodeRecord(x Index, key, buf []byte, shared, fillCache bool, src block.Source) ([]byte, error) {
	h := x.handle()
	if n := binary.LittleEndian.Uint32(buf); uint64(n) != x.Size {
		return nil, r.bf.Corruptf(h, "record length %d, blob index says %d", n, x.Size)
	}
	blk := buf[lengthLen:]
	contents, err := r.bf.DecodeBlock(h, blk, shared, src)
	if err != nil {
		return nil, err
	}
	// After the checksum, so that a damaged type byte is reported as such.
	if code, _ := typeCode(x.Compression); blk[x.Size] != code {
		return nil, r.bf.Corruptf(h, "record compression type %d, blob index says %s", blk[x.Size], x.Compression)
	}
	k, v, err := r.splitContents(h, contents)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(k, key) {
		return nil, r.keyMismatch(x, k, key)
	}
	if fillCache && r.bf.Cache() != nil {
		// aux is the record's length and trailer type, which a hit checks
		// the index against.
		aux := make([]byte, auxLen)
		copy(aux, buf[:lengthLen])
		aux[lengthLen] = blk[x.Size]
		r.bf.SetCached(h, contents, aux)
	}
	return v, nil
}

// splitContents splits a record's decoded contents into key and value.
func (r *Reader) splitContents(h block.Handle, b []byte) (key, value []byte, err error) {
	n, m := binary.Uvarint(b)
	if m <= 0 || n > uint64(len(b)-m) {
		return nil, nil, r.bf.Corruptf(h, "bad key length in blob record")
	}
	return b[m : m+int(n)], b[m+int(n):], nil
}

func (r *Reader) keyMismatch(x Index, stored, want []byte) error {
	return r.bf.Corruptf(x.handle(), "blob record holds key %q, not %q", base.KeyForError(stored), base.KeyForError(want))
}

// verifyChunk is the size of the reads of VerifyFileChecksum.
const verifyChunk = 256 << 10

// VerifyFileChecksum reads every byte before the footer and checks the
// footer's file checksum, which covers what no Index leads to (the header,
// the record lengths of values never read).
func (r *Reader) VerifyFileChecksum() error {
	h := newFileHash(r.props.Checksum)
	src := r.bf.Source()
	for off := uint64(0); off < r.footOff; {
		n := min(verifyChunk, r.footOff-off)
		rr, b, err := r.bf.ReadRange(src, int64(off), int(n))
		if err != nil {
			return err
		}
		h.write(b)
		rr.Release()
		off += n
	}
	if got := h.sum(); got != r.props.FileChecksum {
		return base.CorruptionErrorf(r.bf.Name(), int64(r.footOff)+16, "file checksum mismatch: footer says %#x, computed %#x", r.props.FileChecksum, got)
	}
	return nil
}

// Mapped reports whether values are read from a mapping of the file
// (ReaderOptions.MmapReads on a file that could be mapped).
func (r *Reader) Mapped() bool { return r.bf.Mapped() }

// Close unmaps and closes the file. Cached values stay cached.
func (r *Reader) Close() error { return r.bf.Close() }
