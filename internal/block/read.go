package block

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/readahead"
	"github.com/shaledb/shale/vfs"
)

// DefaultMaxAutoReadahead is the default cap of automatic readahead,
// RocksDB's max_auto_readahead_size.
const DefaultMaxAutoReadahead = 256 << 10

// Source is a handle blocks are read from, with its direct-IO alignment: a
// File's own, or another handle of the same file (a direct-IO one for
// compaction, say).
type Source struct {
	File vfs.File
	// Align is File's vfs.Alignment: above 1 every read is aligned, into
	// pooled aligned memory.
	Align int
	// Stats, when not nil, also receives the counts of reads from this
	// source (a call's own counters): the File's stats always do.
	Stats *ReadStats
	// Deadline bounds the reads from this source (a call's
	// ReadOptions.Deadline and IOTimeout): each read gets the deadline
	// Deadline.ForRead gives when it starts. Zero bounds nothing.
	Deadline vfs.ReadDeadline
}

// FileOptions configure a File.
type FileOptions struct {
	// Name names the file in errors.
	Name string
	// Alignment is the file's vfs.Alignment (above 1: direct IO).
	Alignment int
	// Cache, when not nil, caches the file's blocks under an id of their
	// own (CacheID).
	Cache *cache.Cache
	// CacheID, when not zero, is that id (from Cache.NewID): a file closed
	// and opened again under the id it had finds the blocks it cached
	// before. Zero takes a new id.
	CacheID uint64
	// AsyncReader, when not nil, reads several blocks at once (ReadBlocks).
	AsyncReader vfs.AsyncReader
	// Stats receives the counts of every read; nil counts nowhere.
	Stats *ReadStats
}

// File reads the blocks of one open file: bounds-checked handles, reads
// (buffered or direct IO, from readahead windows, batched), checksum
// verification, decompression, the block cache and the read counters. The
// checksum type is set once the file's format has said it (SetChecksum). A
// File is safe for concurrent use once set up.
type File struct {
	name     string
	src      Source
	checksum ChecksumType
	stats    *ReadStats
	cache    *cache.Cache
	cacheID  uint64
	async    vfs.AsyncReader
	// mapped is the file's mapping (Map), nil when not mapped; unmap
	// releases it.
	mapped []byte
	unmap  func() error
}

// discardStats receives the counts of Files opened without Stats, so the
// read path never checks for nil.
var discardStats ReadStats

// Init sets f up to read file.
func (f *File) Init(file vfs.File, o FileOptions) {
	*f = File{name: o.Name, src: Source{File: file, Align: o.Alignment}, stats: o.Stats,
		cache: o.Cache, async: o.AsyncReader, checksum: ChecksumCRC32C}
	if f.stats == nil {
		f.stats = &discardStats
	}
	if f.cache != nil {
		f.cacheID = o.CacheID
		if f.cacheID == 0 {
			f.cacheID = f.cache.NewID()
		}
	}
}

// Map maps the file's first size bytes read-only (vfs.MapReadOnly), so that
// reads of them from the File's own handle copy from the mapping instead of
// calling ReadAt. It reports whether the file is mapped: one that cannot
// be (a direct-IO handle, a file system without mappings, an error) is
// read with ReadAt, which works everywhere. Call it during set-up; the
// owner calls Unmap after the last read.
func (f *File) Map(size int64) bool {
	if f.mapped == nil && f.src.Align <= 1 && size > 0 {
		if data, unmap, err := vfs.MapReadOnly(f.src.File, size); err == nil {
			f.mapped, f.unmap = data, unmap
		}
	}
	return f.mapped != nil
}

// Mapped reports whether reads come from a mapping of the file.
func (f *File) Mapped() bool { return f.mapped != nil }

// Unmap releases the mapping, if any: no read may run or follow, and no
// bytes a read returned as borrowed (RangeRead.Pooled) may be used after.
func (f *File) Unmap() error {
	if f.unmap == nil {
		return nil
	}
	err := f.unmap()
	f.mapped, f.unmap = nil, nil
	return err
}

// Close unmaps the file, if it is mapped, and closes its handle: the
// owner's last call, after every read.
func (f *File) Close() error {
	err := f.Unmap()
	if cerr := f.src.File.Close(); err == nil {
		err = cerr
	}
	return err
}

// mappedRange returns [off, off+n) of the mapping when src is the File's
// own handle and the range lies in the mapping.
func (f *File) mappedRange(src Source, off int64, n int) ([]byte, bool) {
	if f.mapped == nil || src.File != f.src.File || off < 0 || n < 0 || off > int64(len(f.mapped))-int64(n) {
		return nil, false
	}
	return f.mapped[off : off+int64(n) : off+int64(n)], true
}

// SetChecksum sets the checksum of the file's block trailers.
func (f *File) SetChecksum(t ChecksumType) { f.checksum = t }

// ChecksumType returns the checksum of the file's block trailers.
func (f *File) ChecksumType() ChecksumType { return f.checksum }

// Name returns the file's name, as errors give it.
func (f *File) Name() string { return f.name }

// Source returns the file's own handle.
func (f *File) Source() Source { return f.src }

// Stats returns the counters every read adds to (never nil).
func (f *File) Stats() *ReadStats { return f.stats }

// AsyncReader returns the reader batched reads go through (nil: none).
func (f *File) AsyncReader() vfs.AsyncReader { return f.async }

// Cache returns the block cache (nil: none).
func (f *File) Cache() *cache.Cache { return f.cache }

// CacheID returns the namespace of the file's blocks in the cache; the
// owner of the file passes it to Cache.EvictID when the file is deleted.
func (f *File) CacheID() uint64 { return f.cacheID }

// Cached returns the block cached for h, with the auxiliary buffer cached
// beside it (nil if none). It does not allocate.
func (f *File) Cached(h Handle) (b, aux []byte, ok bool) {
	if f.cache == nil {
		return nil, nil, false
	}
	return f.cache.GetAux(f.cacheID, h.Offset)
}

// SetCached caches the block b read for h with aux (may be nil); the cache
// keeps both, which must never be modified afterwards.
func (f *File) SetCached(h Handle, b, aux []byte) {
	if f.cache != nil {
		f.cache.SetAux(f.cacheID, h.Offset, b, aux)
	}
}

// CachedValue returns the object cached for the block at h by
// SetCachedValue (a decoded index, say). It does not allocate.
func (f *File) CachedValue(h Handle) (any, bool) {
	if f.cache == nil {
		return nil, false
	}
	return f.cache.GetValue(f.cacheID, h.Offset)
}

// PinCachedValue is CachedValue that also pins what it finds, for the
// caller to give back with Unpin.
func (f *File) PinCachedValue(h Handle) (any, bool) {
	if f.cache == nil {
		return nil, false
	}
	return f.cache.PinValue(f.cacheID, h.Offset)
}

// SetCachedValue caches v, built from the block at h, charged charge bytes
// (pinned when pin; see cache.Cache.SetValue), and reports whether it is
// cached.
func (f *File) SetCachedValue(h Handle, v any, charge int64, pin bool) bool {
	if f.cache == nil {
		return false
	}
	return f.cache.SetValue(f.cacheID, h.Offset, v, charge, pin)
}

// Unpin gives back a pin that PinCachedValue or SetCachedValue took for h.
func (f *File) Unpin(h Handle) {
	if f.cache != nil {
		f.cache.Unpin(f.cacheID, h.Offset)
	}
}

// Corruptf returns a base.CorruptionError naming the file and the block at h.
func (f *File) Corruptf(h Handle, format string, args ...any) error {
	return base.CorruptionErrorf(f.name, int64(h.Offset), format, args...)
}

// CheckHandle returns a corruption error unless h, with its trailer, lies
// below limit (the end of the region the block must be in).
func (f *File) CheckHandle(h Handle, limit uint64) error {
	if h.Length > MaxLen || h.Offset > limit || h.Length+TrailerLen > limit-h.Offset {
		return f.Corruptf(h, "block handle (offset %d, length %d) out of bounds", h.Offset, h.Length)
	}
	return nil
}

// ReadResult turns the outcome of a read of want bytes at off, which
// returned n (counting from off), into an error or nil: a short read is
// corruption, a failed one names the file and offset.
func (f *File) ReadResult(off int64, want, n int, err error) error {
	if n >= want {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return base.CorruptionErrorf(f.name, off, "short read: %d of %d bytes", max(n, 0), want)
	}
	return fmt.Errorf("shale: reading %s at offset %d: %w", f.name, off, err)
}

// ReadAt fills b from src at off, counting the read; from a direct-IO
// source it reads the aligned range covering b and copies.
func (f *File) ReadAt(src Source, b []byte, off int64) error {
	if m, ok := f.mappedRange(src, off, len(b)); ok {
		copy(b, m)
		f.CountFileRead(src, len(b))
		return nil
	}
	if src.Align > 1 {
		rr, raw, err := f.ReadRange(src, off, len(b))
		if err != nil {
			return err
		}
		copy(b, raw)
		rr.Release()
		return nil
	}
	n, err := vfs.ReadAtDeadline(src.File, b, off, src.Deadline.ForRead())
	f.CountFileRead(src, n)
	return f.ReadResult(off, len(b), n, err)
}

// ReadRange reads [off, off+n) of src as one RangeRead read with ReadAt,
// counting the read. From a direct-IO source the returned bytes alias rr's
// pooled memory (rr.Pooled()), which the caller releases when done with
// them; from a mapped file they alias the mapping (rr.Pooled() too, valid
// while the mapping is); otherwise they are fresh memory.
func (f *File) ReadRange(src Source, off int64, n int) (rr RangeRead, b []byte, err error) {
	if m, ok := f.mappedRange(src, off, n); ok {
		f.CountFileRead(src, n)
		return RangeRead{borrowed: true, n: n}, m, nil
	}
	rr = NewRangeRead(src, off, n)
	rr.Req.N, rr.Req.Err = vfs.ReadAtDeadline(src.File, rr.Req.Buf, rr.Req.Off, rr.Req.Deadline)
	f.CountFileRead(src, rr.Req.N)
	b, err = f.RangeBytes(&rr)
	if err != nil {
		rr.Release()
		return RangeRead{}, nil, err
	}
	return rr, b, nil
}

// ReadBlock reads, verifies and decompresses the block at h, which must lie
// below limit, bypassing the cache: from ra's window when ra is not nil and
// serves it, else by a read of its own from src. The result never aliases
// memory that is reused.
func (f *File) ReadBlock(h Handle, limit uint64, ra *readahead.State, src Source) ([]byte, error) {
	if err := f.CheckHandle(h, limit); err != nil {
		return nil, err
	}
	total := int(h.Length) + TrailerLen
	var buf []byte
	// shared is true when buf is memory that is reused (a readahead window
	// or a pooled direct-IO buffer): an uncompressed block is then copied
	// out, as a buffered read would have allocated it anyway.
	shared := false
	if ra != nil {
		w, err := ra.Read(int64(h.Offset), total)
		if err != nil {
			return nil, fmt.Errorf("shale: reading ahead in %s at offset %d: %w", f.name, h.Offset, err)
		}
		buf, shared = w, w != nil
	}
	if buf == nil && src.Align > 1 {
		rr, raw, err := f.ReadRange(src, int64(h.Offset), total)
		if err != nil {
			return nil, err
		}
		defer rr.Release()
		buf, shared = raw, true
	}
	if buf == nil {
		if m, ok := f.mappedRange(src, int64(h.Offset), total); ok {
			f.CountFileRead(src, total)
			buf, shared = m, true
		}
	}
	if buf == nil {
		buf = make([]byte, total)
		if err := f.ReadAt(src, buf, int64(h.Offset)); err != nil {
			return nil, err
		}
	}
	return f.DecodeBlock(h, buf, shared, src)
}

// DecodeBlock verifies the checksum of the block at h read into buf (its
// bytes and trailer), decompresses it and counts it as read from src.
// shared says buf is memory that is reused (a readahead window or a pooled
// direct-IO buffer): an uncompressed block is then copied out, so the
// result never aliases reused memory.
func (f *File) DecodeBlock(h Handle, buf []byte, shared bool, src Source) ([]byte, error) {
	n := int(h.Length)
	f.stats.BlockReads.Add(1)
	if src.Stats != nil {
		src.Stats.BlockReads.Add(1)
	}
	if want, got := binary.LittleEndian.Uint32(buf[n+1:]), Checksum(f.checksum, buf[:n+1]); want != got {
		return nil, f.Corruptf(h, "block checksum mismatch: stored %#x, computed %#x", want, got)
	}
	b, msg := Decompress(buf[n], buf[:n])
	if msg != "" {
		return nil, f.Corruptf(h, "%s", msg)
	}
	if shared && buf[n] == TypeNone {
		b = append(make([]byte, 0, n), b...)
	}
	return b, nil
}

// Prefetched is a range of the file already read, [Off, Off+len(Bytes)):
// the tail a reader fetches with the footer, say.
type Prefetched struct {
	Bytes []byte
	Off   uint64
}

// ReadBlocks reads, verifies and decompresses the blocks at hs into got:
// those within pre from it, the others by one batch of reads (through the
// AsyncReader when the File has one, else one after another). Every handle
// is checked against limit before anything is read.
func (f *File) ReadBlocks(pre Prefetched, hs []Handle, limit uint64, got [][]byte) error {
	var missing []int
	for i, h := range hs {
		if err := f.CheckHandle(h, limit); err != nil {
			return err
		}
		if h.Offset < pre.Off || h.End()-pre.Off > uint64(len(pre.Bytes)) {
			missing = append(missing, i)
			continue
		}
		rel := h.Offset - pre.Off
		b, err := f.DecodeBlock(h, pre.Bytes[rel:rel+h.Length+TrailerLen], true, f.src)
		if err != nil {
			return err
		}
		got[i] = b
	}
	if len(missing) == 0 {
		return nil
	}
	if f.async == nil || len(missing) == 1 {
		for _, i := range missing {
			b, err := f.ReadBlock(hs[i], limit, nil, f.src)
			if err != nil {
				return err
			}
			got[i] = b
		}
		return nil
	}
	reads := make([]RangeRead, len(missing))
	reqs := make([]vfs.ReadRequest, len(missing))
	defer func() {
		for j := range reads {
			reads[j].Release()
		}
	}()
	for j, i := range missing {
		h := hs[i]
		reads[j] = NewRangeRead(f.src, int64(h.Offset), int(h.Length)+TrailerLen)
		reqs[j] = reads[j].Req
	}
	f.async.MultiRead(reqs) // errors are checked per request below
	for j, i := range missing {
		rr := &reads[j]
		rr.Req.N, rr.Req.Err = reqs[j].N, reqs[j].Err
		f.CountFileRead(f.src, rr.Req.N)
		f.stats.AsyncReads.Add(1)
		buf, err := f.RangeBytes(rr)
		if err != nil {
			return err
		}
		b, err := f.DecodeBlock(hs[i], buf, rr.Pooled(), f.src)
		if err != nil {
			return err
		}
		got[i] = b
	}
	return nil
}

// CountFileRead counts one read of n bytes from src.
func (f *File) CountFileRead(src Source, n int) {
	for _, s := range [2]*ReadStats{f.stats, src.Stats} {
		if s == nil {
			continue
		}
		s.FileReads.Add(1)
		s.BytesRead.Add(uint64(n))
		if src.Align > 1 {
			s.DirectReads.Add(1)
		}
	}
}

// CountCacheHit counts a block found in the cache.
func (f *File) CountCacheHit(src Source) {
	f.stats.CacheHits.Add(1)
	if src.Stats != nil {
		src.Stats.CacheHits.Add(1)
	}
}

// AddReadahead adds the readahead counters c of a state reading src to the
// File's stats and src's.
func (f *File) AddReadahead(src Source, c readahead.Counters) {
	f.stats.AddReadahead(c, src.Align > 1)
	if src.Stats != nil {
		src.Stats.AddReadahead(c, src.Align > 1)
	}
}

// TakeReadahead adds the counters ra gathered since the last call, so that
// the stats are current while an iterator runs.
func (f *File) TakeReadahead(src Source, ra *readahead.State) {
	if c := ra.Counters(); c != (readahead.Counters{}) {
		ra.TakeCounters()
		f.AddReadahead(src, c)
	}
}
