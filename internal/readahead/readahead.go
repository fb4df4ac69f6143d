package readahead

import (
	"errors"
	"io"

	"github.com/shaledb/shale/vfs"
)

const (
	// InitialAutoSize is the readahead of the first automatic window.
	InitialAutoSize = 8 << 10
	// autoTrigger is the read of a sequential run (counting its first) that
	// fills the first automatic window: RocksDB's num_file_reads_for_auto_readahead
	// of 2 plus the read that triggers it.
	autoTrigger = 3
	// MinPartSize is the smallest request a direct window is split into;
	// MaxParts the most requests one window becomes. Measured on a virtio
	// disk (docs/io-benchmarks.md): a 128 KiB window read as one request
	// scans faster than as two of 64 KiB, and a 1 MiB window faster as four
	// of 256 KiB than as one; a hand-off through the async reader costs
	// about as much as a small request gains by running in parallel.
	MinPartSize = 256 << 10
	MaxParts    = 4
)

// Config configures a State.
type Config struct {
	// Size > 0 reads ahead Size bytes after each block that misses the
	// window, from the first read (explicit readahead).
	Size int64
	// MaxAuto caps automatic readahead when Size is 0; MaxAuto <= 0 turns
	// it off, and then the State serves nothing.
	MaxAuto int64
	// Limit is the offset no window reaches past (rounded up to Alignment).
	Limit int64
	// Alignment is the file's vfs.Alignment; above 1 the file is read with
	// direct IO and every read is aligned in offset, length and address.
	Alignment int
	// Reader, when not nil, reads large direct windows as concurrent parts.
	Reader vfs.AsyncReader
}

// Counters are what a State did, since Init or the last TakeCounters.
type Counters struct {
	// Reads counts read calls made to the file (each part of a split window
	// is one), and BytesRead the bytes they returned.
	Reads, BytesRead uint64
	// BytesIssued counts the bytes read into windows (equal to BytesRead:
	// a State reads nothing else), BytesUsed the bytes of blocks served
	// from windows.
	BytesIssued, BytesUsed uint64
}

// buffer is a window: data[:n] holds the file's bytes [off, off+n), and
// once the reads still in flight complete it will hold [off, off+planned).
type buffer struct {
	mem     *[]byte // pooled backing memory; nil until the first window
	off     int64
	n       int
	planned int
}

// end is the end of what the window holds or will hold.
func (b *buffer) end() int64 { return b.off + int64(b.planned) }

func (b *buffer) contains(off, end int64) bool {
	return b.planned > 0 && off >= b.off && end <= b.end()
}

// State is the readahead of one iterator over one file. The zero value
// serves nothing; Init configures it. It is not safe for concurrent use.
type State struct {
	f   vfs.File
	cfg Config

	// prevEnd is where the previous read ended; runLen counts the reads of
	// the current sequential run; autoSize is the readahead of the next
	// automatic window.
	prevEnd  int64
	runLen   int
	autoSize int64

	cur buffer
	// usedHi is the file offset up to which bytes of the window have been
	// counted as used; it only grows while a window lives, so no byte is
	// counted twice.
	usedHi int64
	reqs   [MaxParts]vfs.ReadRequest
	// inflight is the batch reading the parts of cur, nil when none is in
	// flight; parts are its requests (a prefix of reqs), partDone says which
	// have completed, and partErr is the first error among them. The
	// window's memory must not be reused or pooled while inflight is set:
	// the kernel may still write into it.
	inflight *vfs.ReadBatch
	parts    []vfs.ReadRequest
	partDone [MaxParts]bool
	partErr  error

	counters Counters
}

// Init configures s to read f; it keeps the memory of an earlier window.
func (s *State) Init(f vfs.File, cfg Config) {
	s.drain()
	if cfg.Alignment < 1 {
		cfg.Alignment = 1
	}
	mem := s.cur.mem
	*s = State{f: f, cfg: cfg}
	s.cur.mem = mem
	s.autoSize = s.initialAuto()
}

// Enabled reports whether s may serve reads at all.
func (s *State) Enabled() bool { return s.cfg.Size > 0 || s.cfg.MaxAuto > 0 }

// Release waits for the reads in flight, returns the window's memory to a
// pool shared by all States and returns the counters not yet taken
// (including those of the reads it waited for); s is then empty (as after
// Init with a zero Config).
func (s *State) Release() Counters {
	s.drain()
	c := s.counters
	if s.cur.mem != nil {
		bufferPool.Put(s.cur.mem)
	}
	*s = State{}
	return c
}

// Counters returns the counters since Init or the last TakeCounters.
func (s *State) Counters() Counters { return s.counters }

// TakeCounters returns the counters and zeroes them, so a caller can add
// them to shared totals without counting anything twice.
func (s *State) TakeCounters() Counters {
	c := s.counters
	s.counters = Counters{}
	return c
}

func (s *State) initialAuto() int64 {
	if s.cfg.MaxAuto > 0 {
		return min(InitialAutoSize, s.cfg.MaxAuto)
	}
	return 0
}

// sequential reports whether a read at off continues the current run.
func (s *State) sequential(off int64) bool {
	return off == s.prevEnd || (s.cur.n > 0 && off >= s.cur.off && off < s.cur.end())
}

// note moves the run past [off, end); counts says whether the read counts
// toward the run's length.
func (s *State) note(off, end int64, counts bool) {
	if !s.sequential(off) || s.runLen == 0 {
		s.runLen = 0
		s.autoSize = s.initialAuto()
	}
	if counts {
		s.runLen++
	}
	s.prevEnd = end
}

// NoteCached tells s that the block at [off, off+n) was found elsewhere
// (the block cache): it neither counts toward the sequential run nor
// causes IO, but a run continues across it.
func (s *State) NoteCached(off int64, n int) {
	if !s.Enabled() {
		return
	}
	end := off + int64(n)
	if s.sequential(off) && s.runLen > 0 {
		s.prevEnd = end
		return
	}
	s.runLen = 0
	s.autoSize = s.initialAuto()
	s.prevEnd = end
}

// Read returns the file's bytes [off, off+n) from the window, filling a new
// window first when the mode calls for it. It returns nil and no error when
// it does not serve the read: the caller then reads the block itself. The
// returned bytes belong to s and change with the next Read. An error is
// one the file returned (io.EOF excepted: a window cut short by the end of
// the file serves what it holds, and a block it does not hold is left to
// the caller, who reports the short read).
func (s *State) Read(off int64, n int) ([]byte, error) {
	if !s.Enabled() {
		return nil, nil
	}
	end := off + int64(n)
	if s.cur.contains(off, end) {
		s.note(off, end, true)
		return s.serveWhenRead(off, end)
	}
	s.note(off, end, true)
	var ra int64
	switch {
	case s.cfg.Size > 0:
		ra = s.cfg.Size
	case s.runLen >= autoTrigger:
		ra = s.autoSize
		s.autoSize = min(2*s.autoSize, s.cfg.MaxAuto)
	default:
		return nil, nil
	}
	if err := s.fill(off, end, ra); err != nil {
		return nil, err
	}
	if !s.cur.contains(off, end) {
		return nil, nil
	}
	return s.serveWhenRead(off, end)
}

// serveWhenRead waits until the window's parts up to end have been read and
// serves [off, end). When the window ends short of end (the file ended, or
// a part failed), it serves nothing and the caller reads the block itself:
// a failed prefetch never fails a read that works, and an error that
// persists is reported by the caller's own read, with the block's offset.
func (s *State) serveWhenRead(off, end int64) ([]byte, error) {
	for s.inflight != nil && s.cur.off+int64(s.cur.n) < end {
		if !s.awaitPart() {
			break
		}
	}
	if s.cur.off+int64(s.cur.n) < end {
		return nil, nil
	}
	return s.serve(off, end), nil
}

// serve counts [off, end) as used and returns it from the window.
func (s *State) serve(off, end int64) []byte {
	if from := max(off, s.usedHi); end > from {
		s.counters.BytesUsed += uint64(end - from)
		s.usedHi = end
	}
	return (*s.cur.mem)[off-s.cur.off : end-s.cur.off]
}

// fill replaces the window with one that holds [off, end) and ra bytes
// after it (within the limit). A window split into parts is submitted to
// the async reader as one batch and not waited for: Read waits only for the
// parts it serves from, so the parts after them are read while the caller
// works through the first (the device sees every part at once, and the CPU
// does not wait for the whole window).
func (s *State) fill(off, end, ra int64) error {
	s.drain()
	reqs := s.prepare(&s.cur, off, end, ra)
	if len(reqs) == 0 {
		return nil
	}
	if len(reqs) == 1 || s.cfg.Reader == nil {
		for i := range reqs {
			r := &reqs[i]
			r.N, r.Err = s.f.ReadAt(r.Buf, r.Off)
		}
		return s.finish(&s.cur, reqs)
	}
	s.parts = reqs
	s.partDone = [MaxParts]bool{}
	s.partErr = nil
	s.inflight = s.cfg.Reader.Submit(reqs)
	return nil
}

// awaitPart waits for one more part of the window in flight and extends
// the window's valid prefix over the parts now complete and full. It
// returns false when no part remains.
func (s *State) awaitPart() bool {
	i, ok := s.inflight.Next()
	if !ok {
		s.inflight.Release()
		s.inflight = nil
		return false
	}
	r := &s.parts[i]
	s.partDone[i] = true
	s.counters.Reads++
	s.counters.BytesRead += uint64(r.N)
	s.counters.BytesIssued += uint64(r.N)
	if r.Err != nil && !errors.Is(r.Err, io.EOF) && s.partErr == nil {
		s.partErr = r.Err
	}
	// The valid prefix grows over completed parts in order, up to the first
	// short or failed one.
	b := &s.cur
	for p := range s.parts {
		q := &s.parts[p]
		qEnd := int(q.Off-b.off) + len(q.Buf)
		if qEnd <= b.n {
			continue
		}
		if !s.partDone[p] || q.Err != nil && !errors.Is(q.Err, io.EOF) {
			break
		}
		b.n = int(q.Off-b.off) + q.N
		if q.N < len(q.Buf) {
			break
		}
	}
	if s.allPartsDone() {
		s.retire()
	}
	return true
}

func (s *State) allPartsDone() bool {
	for p := range s.parts {
		if !s.partDone[p] {
			return false
		}
	}
	return true
}

// retire ends the batch in flight once every part has completed: the
// window then holds exactly its valid prefix.
func (s *State) retire() {
	// Every request has been returned by Next, so Release recycles it.
	if _, ok := s.inflight.Next(); !ok {
		s.inflight.Release()
	}
	s.inflight = nil
	for p := range s.parts {
		q := &s.parts[p]
		q.Buf, q.File, q.Err = nil, nil, nil // do not pin them in s
	}
	s.parts = nil
	// The window keeps its valid prefix, which ends before a short or
	// failed part: blocks there were read, whatever came after them.
	s.cur.planned = s.cur.n
}

// drain waits for the reads in flight, so the window's memory may be
// reused or pooled.
func (s *State) drain() {
	for s.inflight != nil {
		s.awaitPart()
	}
}

// prepare points b at the new window and returns the requests that fill
// it, built in s.reqs. The part of the old window the new one starts in is
// kept (moved to the front), and only the rest is requested.
func (s *State) prepare(b *buffer, off, end, ra int64) []vfs.ReadRequest {
	align := s.cfg.Alignment
	wantEnd := max(end, min(end+ra, s.cfg.Limit))
	start, stop := vfs.AlignDown(off, align), vfs.AlignUp(wantEnd, align)
	// Keep the old window's tail when the new window starts inside it and
	// the tail ends on an alignment boundary (it does unless the file
	// ended there, and then there is nothing more to read anyway).
	keep := 0
	if b.n > 0 && start >= b.off && start < b.end() && b.end()%int64(align) == 0 {
		keep = int(b.end() - start)
	}
	need := int(stop - start)
	if b.mem == nil || cap(*b.mem) < need || !vfs.AddrAligned(*b.mem, align) {
		mem := bufferPool.Get(need, align)
		if keep > 0 {
			copy(*mem, (*b.mem)[start-b.off:b.n])
		}
		if b.mem != nil {
			bufferPool.Put(b.mem)
		}
		b.mem = mem
	} else if keep > 0 {
		copy(*b.mem, (*b.mem)[start-b.off:b.n])
	}
	if keep == 0 {
		s.usedHi = start
	}
	b.off, b.n, b.planned = start, keep, need
	from := start + int64(keep)
	if from >= stop {
		return nil
	}
	data := (*b.mem)[keep:need]
	parts := 1
	if align > 1 && s.cfg.Reader != nil {
		parts = min(MaxParts, len(data)/MinPartSize)
		parts = max(parts, 1)
	}
	partLen := vfs.AlignDown(int64(len(data)/parts), align)
	reqs := s.reqs[:0]
	for p := 0; p < parts && len(data) > 0; p++ {
		l := int(min(partLen, int64(len(data))))
		if p == parts-1 {
			l = len(data)
		}
		reqs = append(reqs, vfs.ReadRequest{File: s.f, Off: from, Buf: data[:l]})
		data = data[l:]
		from += int64(l)
	}
	return reqs
}

// finish accounts for the completed requests of b: the window holds the
// bytes up to the first short or failed request.
func (s *State) finish(b *buffer, reqs []vfs.ReadRequest) error {
	contiguous := true
	var err error
	for i := range reqs {
		r := &reqs[i]
		s.counters.Reads++
		s.counters.BytesRead += uint64(r.N)
		s.counters.BytesIssued += uint64(r.N)
		if contiguous {
			b.n += r.N
			contiguous = r.N == len(r.Buf)
		}
		b.planned = b.n
		if r.Err != nil && !errors.Is(r.Err, io.EOF) && err == nil {
			err = r.Err
		}
		r.Buf, r.File, r.Err = nil, nil, nil // do not pin them in s
	}
	if err != nil {
		b.n, b.planned = 0, 0
	}
	return err
}

// bufferPool holds window memory between iterators.
var bufferPool vfs.AlignedPool
