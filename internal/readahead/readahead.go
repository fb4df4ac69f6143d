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
	// asyncAutoTrigger is autoTrigger with Config.Async: the second read of
	// a run already fills a window and starts the background prefetch,
	// since with async IO the prefetch runs while the reader works instead
	// of stalling it (a stall per file per seek saved on long scans).
	asyncAutoTrigger = 2
	// MinPartSize is the smallest request a direct window is split into;
	// MaxParts the most requests one window becomes. Measured on a virtio
	// disk (docs/io-benchmarks.md): a 128 KiB window read as one request
	// scans faster than as two of 64 KiB, and a 1 MiB window faster as four
	// of 256 KiB than as one; a hand-off through the async reader costs
	// about as much as a small request gains by running in parallel.
	MinPartSize = 256 << 10
	MaxParts    = 4
	// straddleRoom is the room a prefetch buffer keeps in front of the
	// bytes it reads, so that a block straddling the end of the current
	// window can be joined to the prefetched bytes without copying them: the
	// current window's tail is copied into the room instead. A block with a
	// longer tail than this is left to the caller.
	straddleRoom = 64 << 10
)

// SplitWindow selects how the async double buffer (Config.Async) sizes its
// two buffers. false (the default): each buffer reads a full window of the
// size the synchronous mode would read. true: one window is split between
// the two buffers, each reading half of it (RocksDB's layout). It is a
// package-level knob for benchmarks (BenchmarkScanAsync); set it only while
// no State is in use.
var SplitWindow = false

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
	// Reader, when not nil, reads large direct windows as concurrent parts,
	// and the prefetches of Async.
	Reader vfs.AsyncReader
	// Async double-buffers the readahead (ReadOptions.AsyncIO): whenever a
	// window is filled, the window right after it is read in the background
	// through Reader, and reads that move into it swap the buffers. It
	// needs Reader; without one it is ignored.
	Async bool
	// Deadline bounds the State's reads (vfs.ReadRequest.Deadline, from
	// Deadline.ForRead as each read starts). A read that times out fails
	// the part it was to fill, as any read error does. Zero bounds nothing.
	Deadline vfs.ReadDeadline
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
	// Hits counts the blocks served from windows.
	Hits uint64
	// AsyncReads counts the background prefetches submitted (one per
	// window read ahead of the reader, however many parts it has).
	AsyncReads uint64
}

// buffer is a window: (*mem)[base:base+n] holds the file's bytes
// [off, off+n), and once the reads still in flight complete it will hold
// [off, off+planned).
type buffer struct {
	mem     *[]byte // pooled backing memory; nil until the first window
	base    int     // where the window's bytes start in mem
	off     int64
	n       int
	planned int

	reqs [MaxParts]vfs.ReadRequest
	// inflight is the batch reading the parts of the window, nil when none
	// is in flight; parts are its requests (a prefix of reqs), partDone says
	// which have completed, and partErr is the first error among them. The
	// window's memory must not be reused or pooled while inflight is set:
	// the kernel may still write into it.
	inflight *vfs.ReadBatch
	parts    []vfs.ReadRequest
	partDone [MaxParts]bool
	partErr  error
}

// end is the end of what the window holds or will hold.
func (b *buffer) end() int64 { return b.off + int64(b.planned) }

// validEnd is the end of what the window holds now.
func (b *buffer) validEnd() int64 { return b.off + int64(b.n) }

func (b *buffer) contains(off, end int64) bool {
	return b.planned > 0 && off >= b.off && end <= b.end()
}

// clear empties the window, keeping its memory; no read may be in flight.
func (b *buffer) clear() {
	b.base, b.off, b.n, b.planned = 0, 0, 0, 0
}

// State is the readahead of one iterator over one file. The zero value
// serves nothing; Init configures it. It is not safe for concurrent use.
//
// A State holds two buffers, bufs[cur] (the window reads are served from)
// and bufs[1-cur] (the prefetch: only used with Config.Async, empty
// otherwise). It may be copied only while no read is in flight (after
// Release), since a batch in flight writes into its requests in place.
type State struct {
	f   vfs.File
	cfg Config

	// prevEnd is where the previous read ended; runLen counts the reads of
	// the current sequential run; autoSize is the readahead of the next
	// automatic window.
	prevEnd  int64
	runLen   int
	autoSize int64
	// backward is true when the last read noted started before the one
	// noted before it, which started at prevOff (a backward scan: with an
	// explicit Size, windows are filled for it too).
	backward bool
	prevOff  int64

	bufs [2]buffer
	cur  int
	// usedHi is the file offset up to which bytes of the windows have been
	// counted as used; it only grows while a run of windows lives (the
	// prefetch always lies after the current window), so no byte is
	// counted twice.
	usedHi int64

	counters Counters
}

// Init configures s to read f; it keeps the memory of earlier windows.
func (s *State) Init(f vfs.File, cfg Config) {
	s.drain()
	if cfg.Alignment < 1 {
		cfg.Alignment = 1
	}
	if cfg.Reader == nil {
		cfg.Async = false
	}
	m0, m1 := s.bufs[0].mem, s.bufs[1].mem
	*s = State{f: f, cfg: cfg}
	s.bufs[0].mem, s.bufs[1].mem = m0, m1
	s.autoSize = s.initialAuto()
}

// Enabled reports whether s may serve reads at all.
func (s *State) Enabled() bool { return s.cfg.Size > 0 || s.cfg.MaxAuto > 0 }

// Release waits for the reads in flight, returns the windows' memory to a
// pool shared by all States and returns the counters not yet taken
// (including those of the reads it waited for); s is then empty (as after
// Init with a zero Config).
func (s *State) Release() Counters {
	s.drain()
	c := s.counters
	for i := range s.bufs {
		if m := s.bufs[i].mem; m != nil {
			bufferPool.Put(m)
		}
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
	if off == s.prevEnd {
		return true
	}
	for i := range s.bufs {
		if b := &s.bufs[i]; b.planned > 0 && off >= b.off && off < b.end() {
			return true
		}
	}
	return false
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
	s.backward = off < s.prevOff
	s.prevOff, s.prevEnd = off, end
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

// NoteRead tells s that the caller read the block at [off, off+n) from
// the file by itself (the read a two-phase seek submitted ahead): it counts
// toward the sequential run like a read s did not serve, but causes no IO.
func (s *State) NoteRead(off int64, n int) {
	if !s.Enabled() {
		return
	}
	s.note(off, off+int64(n), true)
}

// Read returns the file's bytes [off, off+n) from the window, filling a new
// window first when the mode calls for it. It returns nil and no error when
// it does not serve the read: the caller then reads the block itself. The
// returned bytes belong to s and change with the next Read. An error is
// one the file returned (io.EOF excepted: a window cut short by the end of
// the file serves what it holds, and a block it does not hold is left to
// the caller, who reports the short read). A failed background prefetch
// returns no error: the caller reads the block itself.
func (s *State) Read(off int64, n int) ([]byte, error) {
	if !s.Enabled() {
		return nil, nil
	}
	end := off + int64(n)
	cur := &s.bufs[s.cur]
	if cur.contains(off, end) {
		s.note(off, end, true)
		return s.serveWhenRead(cur, off, end), nil
	}
	if s.cfg.Async {
		if b, ok := s.tryPrefetched(off, end); ok {
			return b, nil
		}
	}
	s.note(off, end, true)
	var ra int64
	switch {
	case s.cfg.Size > 0:
		ra = s.cfg.Size
	case s.runLen >= autoTrigger || s.cfg.Async && s.runLen >= asyncAutoTrigger:
		ra = s.autoSize
		s.autoSize = min(2*s.autoSize, s.cfg.MaxAuto)
	default:
		return nil, nil
	}
	if err := s.fill(off, end, s.portion(ra)); err != nil {
		return nil, err
	}
	if !cur.contains(off, end) {
		return nil, nil
	}
	return s.serveWhenRead(cur, off, end), nil
}

// portion is the share of a window of ra bytes one buffer reads: all of
// it, or half with SplitWindow in async mode.
func (s *State) portion(ra int64) int64 {
	if s.cfg.Async && SplitWindow {
		return max(ra/2, int64(s.cfg.Alignment))
	}
	return ra
}

// nextWindow is the readahead of the prefetch that follows the current
// window: the explicit size, or the next automatic window.
func (s *State) nextWindow() int64 {
	if s.cfg.Size > 0 {
		return s.portion(s.cfg.Size)
	}
	// The background windows keep the synchronous ramp (doubling up to
	// MaxAuto): measured on the asyncio benchmark, jumping straight to
	// MaxAuto scanned no faster and wasted up to 5x the bytes on short
	// scans (BenchmarkShortScanBytes).
	ra := s.autoSize
	s.autoSize = min(2*s.autoSize, s.cfg.MaxAuto)
	return s.portion(ra)
}

// tryPrefetched serves [off, end) from the prefetch buffer when the read
// has moved into it (or straddles the current window's end into it): it
// waits for the prefetched bytes the read needs, makes the prefetch the
// current window and submits the prefetch of the window after it. ok is
// false when the prefetch buffer does not hold the read; b is nil (with
// ok true) when the prefetch failed or came back short, and the caller
// reads the block itself.
func (s *State) tryPrefetched(off, end int64) (b []byte, ok bool) {
	cur, nxt := &s.bufs[s.cur], &s.bufs[1-s.cur]
	if nxt.planned == 0 || end > nxt.end() {
		return nil, false
	}
	tail := 0 // bytes of the read at the end of cur
	switch {
	case off >= nxt.off:
	case off >= cur.off && off < cur.end() && nxt.off == cur.end():
		// The block straddles the two windows: it needs all of cur's tail.
		s.drainBuf(cur)
		if cur.validEnd() != nxt.off {
			return nil, false
		}
		tail = int(nxt.off - off)
	default:
		return nil, false
	}
	s.note(off, end, true)
	for nxt.inflight != nil && nxt.validEnd() < end {
		s.awaitPart(nxt)
	}
	if nxt.validEnd() < end {
		// A failed or short prefetch: forget it, and let the caller read.
		s.drainBuf(nxt)
		nxt.clear()
		return nil, true
	}
	if tail > 0 {
		if tail > nxt.base {
			return nil, true // a block longer than the room: the caller reads it
		}
		copy((*nxt.mem)[nxt.base-tail:nxt.base], (*cur.mem)[cur.base+int(off-cur.off):cur.base+cur.n])
		nxt.base -= tail
		nxt.off -= int64(tail)
		nxt.n += tail
		nxt.planned += tail
	}
	// Swap: the old window becomes the prefetch buffer, once nothing
	// reads into it any more.
	s.drainBuf(cur)
	cur.clear()
	s.cur = 1 - s.cur
	s.prefetch()
	return s.serve(&s.bufs[s.cur], off, end), true
}

// serveWhenRead waits until b's parts up to end have been read and serves
// [off, end). When the window ends short of end (the file ended, or a part
// failed), it serves nothing and the caller reads the block itself: a
// failed prefetch never fails a read that works, and an error that
// persists is reported by the caller's own read, with the block's offset.
func (s *State) serveWhenRead(b *buffer, off, end int64) []byte {
	for b.inflight != nil && b.validEnd() < end {
		if !s.awaitPart(b) {
			break
		}
	}
	if b.validEnd() < end {
		return nil
	}
	return s.serve(b, off, end)
}

// serve counts [off, end) as used and returns it from b.
func (s *State) serve(b *buffer, off, end int64) []byte {
	if from := max(off, s.usedHi); end > from {
		s.counters.BytesUsed += uint64(end - from)
		s.usedHi = end
	}
	s.counters.Hits++
	return (*b.mem)[b.base+int(off-b.off) : b.base+int(end-b.off)]
}

// fill replaces the current window with one that holds [off, end) and ra
// bytes after it (within the limit). A window split into parts is
// submitted to the async reader as one batch and not waited for: Read
// waits only for the parts it serves from, so the parts after them are
// read while the caller works through the first (the device sees every
// part at once, and the CPU does not wait for the whole window). In async
// mode the prefetch of the window after it is submitted before the
// window's own read, so the two overlap.
func (s *State) fill(off, end, ra int64) error {
	cur, nxt := &s.bufs[s.cur], &s.bufs[1-s.cur]
	s.drainBuf(cur)
	s.drainBuf(nxt)
	nxt.clear()
	reqs := s.prepare(cur, off, end, ra)
	// A backward scan never reads the bytes after the window, and the
	// next fill would wait for them: no prefetch then.
	if s.cfg.Async && !s.backward {
		s.prefetch()
	}
	if len(reqs) == 0 {
		return nil
	}
	if len(reqs) == 1 || s.cfg.Reader == nil {
		for i := range reqs {
			r := &reqs[i]
			r.N, r.Err = vfs.ReadAtDeadline(s.f, r.Buf, r.Off, r.Deadline)
		}
		return s.finish(cur, reqs)
	}
	s.submit(cur, reqs)
	return nil
}

// submit starts the reads of b's parts.
func (s *State) submit(b *buffer, reqs []vfs.ReadRequest) {
	b.parts = reqs
	b.partDone = [MaxParts]bool{}
	b.partErr = nil
	b.inflight = s.cfg.Reader.Submit(reqs)
}

// prefetch submits the read of the window after the current one, within
// the limit, into the other buffer (which must be idle). It reads nothing
// when the current window reaches the limit or ends unaligned (the file
// ended there).
func (s *State) prefetch() {
	cur, nxt := &s.bufs[s.cur], &s.bufs[1-s.cur]
	nxt.clear()
	align := s.cfg.Alignment
	from := cur.end()
	if cur.planned == 0 || from%int64(align) != 0 || from >= s.cfg.Limit {
		return
	}
	stop := vfs.AlignUp(min(from+s.nextWindow(), s.cfg.Limit), align)
	if stop <= from {
		return
	}
	room := int(vfs.AlignUp(straddleRoom, align))
	need := int(stop - from)
	if nxt.mem == nil || cap(*nxt.mem) < room+need || !vfs.AddrAligned(*nxt.mem, align) {
		if nxt.mem != nil {
			bufferPool.Put(nxt.mem)
		}
		nxt.mem = bufferPool.Get(room+need, align)
	}
	nxt.base, nxt.off, nxt.n, nxt.planned = room, from, 0, need
	reqs := s.split(nxt, (*nxt.mem)[room:room+need], from)
	s.counters.AsyncReads++
	s.submit(nxt, reqs)
}

// awaitPart waits for one more part of b's window in flight and extends
// the window's valid prefix over the parts now complete and full. It
// returns false when no part remains.
func (s *State) awaitPart(b *buffer) bool {
	i, ok := b.inflight.Next()
	if !ok {
		b.inflight.Release()
		b.inflight = nil
		return false
	}
	r := &b.parts[i]
	b.partDone[i] = true
	s.counters.Reads++
	s.counters.BytesRead += uint64(r.N)
	s.counters.BytesIssued += uint64(r.N)
	if r.Err != nil && !errors.Is(r.Err, io.EOF) && b.partErr == nil {
		b.partErr = r.Err
	}
	// The valid prefix grows over completed parts in order, up to the first
	// short or failed one.
	for p := range b.parts {
		q := &b.parts[p]
		qEnd := int(q.Off-b.off) + len(q.Buf)
		if qEnd <= b.n {
			continue
		}
		if !b.partDone[p] || q.Err != nil && !errors.Is(q.Err, io.EOF) {
			break
		}
		b.n = int(q.Off-b.off) + q.N
		if q.N < len(q.Buf) {
			break
		}
	}
	if b.allPartsDone() {
		s.retire(b)
	}
	return true
}

func (b *buffer) allPartsDone() bool {
	for p := range b.parts {
		if !b.partDone[p] {
			return false
		}
	}
	return true
}

// retire ends b's batch in flight once every part has completed: the
// window then holds exactly its valid prefix.
func (s *State) retire(b *buffer) {
	// Every request has been returned by Next, so Release recycles it.
	if _, ok := b.inflight.Next(); !ok {
		b.inflight.Release()
	}
	b.inflight = nil
	for p := range b.parts {
		q := &b.parts[p]
		q.Buf, q.File, q.Err = nil, nil, nil // do not pin them in s
	}
	b.parts = nil
	// The window keeps its valid prefix, which ends before a short or
	// failed part: blocks there were read, whatever came after them.
	b.planned = b.n
}

// drain waits for every read in flight, so the windows' memory may be
// reused or pooled.
func (s *State) drain() {
	s.drainBuf(&s.bufs[0])
	s.drainBuf(&s.bufs[1])
}

// drainBuf waits for b's reads in flight.
func (s *State) drainBuf(b *buffer) {
	for b.inflight != nil {
		s.awaitPart(b)
	}
}

// prepare points b at the new window and returns the requests that fill
// it. The part of the old window the new one starts in is kept (moved to
// the front), and only the rest is requested.
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
	from0 := b.base + int(start-b.off) // the kept tail in the old memory
	if b.mem == nil || cap(*b.mem) < need || !vfs.AddrAligned(*b.mem, align) {
		mem := bufferPool.Get(need, align)
		if keep > 0 {
			copy(*mem, (*b.mem)[from0:b.base+b.n])
		}
		if b.mem != nil {
			bufferPool.Put(b.mem)
		}
		b.mem = mem
	} else if keep > 0 {
		copy(*b.mem, (*b.mem)[from0:b.base+b.n])
	}
	if keep == 0 {
		s.usedHi = start
	}
	b.base, b.off, b.n, b.planned = 0, start, keep, need
	from := start + int64(keep)
	if from >= stop {
		return nil
	}
	return s.split(b, (*b.mem)[keep:need], from)
}

// split builds, in b.reqs, the requests that read data from the file at
// from: one, or with direct IO and an async reader up to MaxParts aligned
// parts of at least MinPartSize.
func (s *State) split(b *buffer, data []byte, from int64) []vfs.ReadRequest {
	align := s.cfg.Alignment
	parts := 1
	if align > 1 && s.cfg.Reader != nil {
		parts = min(MaxParts, len(data)/MinPartSize)
		parts = max(parts, 1)
	}
	partLen := vfs.AlignDown(int64(len(data)/parts), align)
	reqs := b.reqs[:0]
	for p := 0; p < parts && len(data) > 0; p++ {
		l := int(min(partLen, int64(len(data))))
		if p == parts-1 {
			l = len(data)
		}
		reqs = append(reqs, vfs.ReadRequest{File: s.f, Off: from, Buf: data[:l], Deadline: s.cfg.Deadline.ForRead()})
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
