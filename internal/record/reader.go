package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/checksum"
)

// fragStatus says whether a fragment checked out, and if not, why.
type fragStatus uint8

const (
	fragOK fragStatus = iota
	fragTruncatedHeader
	fragZeroHeader
	fragBadLength
	fragTruncatedPayload
	fragBadType
	fragBadChecksum
	// fragMissing is no fragment at all: the file ends where the rest of a
	// record should be.
	fragMissing
)

var fragStatusMsg = [...]string{
	fragOK:               "ok",
	fragTruncatedHeader:  "truncated fragment header",
	fragZeroHeader:       "zeroed fragment header",
	fragBadLength:        "fragment length crosses the block boundary",
	fragTruncatedPayload: "truncated fragment payload",
	fragBadType:          "unknown fragment type",
	fragBadChecksum:      "fragment checksum mismatch",
	fragMissing:          "file ends inside a record",
}

// blockRemaining returns the bytes from file offset off to the end of its
// block.
func blockRemaining(off int64) int {
	return BlockSize - int(off%BlockSize)
}

// parseFragment checks the fragment whose header starts at d[i]; blockRem is
// the number of bytes from d[i] to the end of its block (>= HeaderSize).
// Everything it looks at comes from disk, so it only reports, never panics.
func parseFragment(d []byte, i, blockRem int) (typ byte, length int, st fragStatus) {
	avail := len(d) - i
	if avail < HeaderSize {
		return 0, 0, fragTruncatedHeader
	}
	h := d[i : i+HeaderSize]
	sum := binary.LittleEndian.Uint32(h)
	length = int(binary.LittleEndian.Uint16(h[4:]))
	typ = h[6]
	switch {
	case sum == 0 && length == 0 && typ == 0:
		return typ, length, fragZeroHeader
	case HeaderSize+length > blockRem:
		return typ, length, fragBadLength
	case HeaderSize+length > avail:
		return typ, length, fragTruncatedPayload
	case typ < fullFragment || typ > lastFragment:
		return typ, length, fragBadType
	}
	if checksum.MaskedCRC32C(d[i+6:i+HeaderSize+length]) != sum {
		return typ, length, fragBadChecksum
	}
	return typ, length, fragOK
}

// Reader reads the records of a block-framed file in order. See the package
// documentation for how it tells a torn tail from corruption.
type Reader struct {
	r        io.Reader
	fileName string

	block []byte // streaming buffer, reused for each block
	// data holds the file bytes [dataOff, dataOff+len(data)); dataOff is a
	// block boundary. While streaming it is one block; after damage is met it
	// is the whole rest of the file.
	data    []byte
	dataOff int64
	pos     int  // next unread byte of data
	eof     bool // data reaches the end of the file
	// loaded is set once data holds the whole rest of the file; nonZeroEnd
	// is then the length of data without its trailing zeros.
	loaded     bool
	nonZeroEnd int

	rec            []byte // assembles fragmented records
	recOff, recEnd int64  // extent of the record last returned

	// resumeAt, when >= 0, is where the next call to Next starts after a
	// CorruptionError; skipFrom is where the dropped bytes began.
	resumeAt, skipFrom   int64
	skipped              int64
	tornOff, tornDropped int64
	// tailDamage is set when the dropped tail cannot be a torn write; see
	// TailDamage.
	tailDamage error
	err        error // sticky: an IO error, or io.EOF at the end
	// mappedUnit is SetMappedWriteUnit's unit (0: off).
	mappedUnit int64
	// startSkip is NewReaderAt's offset within its first block: the first
	// fill starts reading fragments there.
	startSkip int
}

// NewReader returns a Reader of the file read from r, which must be
// positioned at offset 0. fileName is used in corruption errors.
func NewReader(r io.Reader, fileName string) *Reader {
	return &Reader{r: r, fileName: fileName, resumeAt: -1}
}

// NewReaderAt returns a Reader of the file read through r from offset off
// on, which must be where a record starts or where the records an earlier
// Reader returned ended (its EndOffset): a follower of a file another
// process appends to (a secondary instance) reads each new stretch once.
// The block holding off is read from its start, so block framing and the
// torn-tail rule work as for a Reader from offset 0.
func NewReaderAt(r io.ReaderAt, fileName string, off int64) *Reader {
	off = max(off, 0)
	start := off - off%BlockSize
	return &Reader{r: io.NewSectionReader(r, start, math.MaxInt64-start), fileName: fileName, resumeAt: -1,
		dataOff: start, startSkip: int(off - start)}
}

// SetMappedWriteUnit tells r that its file may have been grown ahead of
// its records to a multiple of unit bytes before they were copied in:
// through a shared memory mapping grown in windows (the WAL's
// wal.WriterOptions.Mmap), or with zeros (wal.WriterOptions.ZeroFill). A
// crash of the writing process, or a power loss after a page was written
// back in the middle of a copy, can then cut the last copy at any byte,
// leaving a prefix of it and zeros to the end of the file, which no sector
// rule explains: a bad fragment is also taken for torn when the file's
// size is a multiple of unit and the file's last non-zero byte lies inside
// the fragment's block from its start on. 0, the default, turns this off.
func (r *Reader) SetMappedWriteUnit(unit int64) { r.mappedUnit = max(unit, 0) }

// fragment is one fragment as seen by Next.
type fragment struct {
	off     int64 // file offset of the header
	typ     byte
	payload []byte
	end     int64 // file offset just past the payload
	st      fragStatus
	eof     bool // no fragment: the file ended cleanly at off
}

// fill loads the next block while streaming. It returns an IO error only.
func (r *Reader) fill() error {
	if r.block == nil {
		r.block = make([]byte, BlockSize)
	}
	r.dataOff += int64(len(r.data))
	n, err := io.ReadFull(r.r, r.block)
	r.data, r.pos = r.block[:n], 0
	if r.startSkip > 0 {
		r.pos, r.startSkip = min(r.startSkip, n), 0
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		r.eof = true
		return nil
	}
	return err
}

// loadRest reads the rest of the file into memory after r.data.
func (r *Reader) loadRest() error {
	if r.loaded {
		return nil
	}
	if !r.eof {
		rest, err := io.ReadAll(r.r)
		if err != nil {
			return err
		}
		d := make([]byte, len(r.data)+len(rest))
		copy(d, r.data)
		copy(d[len(r.data):], rest)
		r.data, r.eof = d, true
	}
	r.loaded = true
	r.nonZeroEnd = len(bytes.TrimRight(r.data, "\x00"))
	return nil
}

// nextFragment reads the fragment at the current position, skipping block
// padding. A bad fragment is returned with its status; pos is then left
// unchanged past the header.
func (r *Reader) nextFragment() (fragment, error) {
	for {
		if r.pos >= len(r.data) {
			if r.eof {
				return fragment{off: r.dataOff + int64(len(r.data)), eof: true}, nil
			}
			if err := r.fill(); err != nil {
				return fragment{}, err
			}
			continue
		}
		off := r.dataOff + int64(r.pos)
		rem := blockRemaining(off)
		if rem < HeaderSize {
			r.pos += rem // zero padding at the end of a block
			continue
		}
		typ, n, st := parseFragment(r.data, r.pos, rem)
		f := fragment{off: off, typ: typ, st: st, end: off + int64(HeaderSize+n)}
		if st == fragOK {
			f.payload = r.data[r.pos+HeaderSize : r.pos+HeaderSize+n]
			r.pos += HeaderSize + n
		}
		return f, nil
	}
}

// Next returns the next record. The slice is valid until the next call. At
// the end of the file it returns io.EOF, and TornTail tells what was dropped.
// On damage followed by an intact record it returns a *base.CorruptionError;
// calling Next again skips the damage and resumes at that intact record.
// Any other error comes from the underlying io.Reader and is sticky.
func (r *Reader) Next() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.resumeAt >= 0 {
		r.pos = int(r.resumeAt - r.dataOff)
		r.skipped += r.resumeAt - r.skipFrom
		r.resumeAt = -1
	}
	r.rec = r.rec[:0]
	inRecord := false
	var recOff int64
	for {
		f, err := r.nextFragment()
		if err != nil {
			r.err = err
			return nil, err
		}
		dropFrom := f.off
		if inRecord {
			dropFrom = recOff
		}
		if f.eof {
			if inRecord {
				return r.damage(recOff, f.off, dropFrom, f.off, fragMissing,
					"record at offset %d is truncated: missing its LAST fragment", recOff)
			}
			r.tornOff, r.tornDropped, r.tailDamage = f.off, 0, nil
			r.err = io.EOF
			return nil, io.EOF
		}
		if f.st != fragOK {
			// Follow the bad fragment's length when it stays in its block;
			// findIntact checks that bound.
			return r.damage(f.off, f.off, dropFrom, f.end, f.st, "%s", fragStatusMsg[f.st])
		}
		switch f.typ {
		case fullFragment, firstFragment:
			if inRecord {
				// The fragment itself may start an intact record, so the
				// search starts at it.
				return r.damage(recOff, f.off, dropFrom, f.off, fragOK,
					"record lacks its LAST fragment: found type %d at offset %d", f.typ, f.off)
			}
			if f.typ == fullFragment {
				r.recOff, r.recEnd = f.off, f.end
				return f.payload, nil
			}
			inRecord, recOff = true, f.off
			r.rec = append(r.rec, f.payload...)
		default: // middle, last
			if !inRecord {
				return r.damage(f.off, f.off, f.off, f.end, fragOK, "fragment of type %d outside a record", f.typ)
			}
			r.rec = append(r.rec, f.payload...)
			if f.typ == lastFragment {
				r.recOff, r.recEnd = recOff, f.end
				return r.rec, nil
			}
		}
	}
}

// damage handles a bad fragment at fragOff, whose status is st (fragOK for a
// valid fragment out of place, fragMissing for the end of the file inside a
// record): it reads the rest of the file and decides between corruption (an
// intact record follows) and the end of the log, and at the end between a
// torn write and damage (judgeTail). errOff is the offset the error names
// (the bad fragment, or the start of a record cut short); dropFrom is where
// the record being dropped began; the search for an intact record follows
// the fragment chain from chainFrom.
func (r *Reader) damage(errOff, fragOff, dropFrom, chainFrom int64, st fragStatus, format string, args ...any) ([]byte, error) {
	if err := r.loadRest(); err != nil {
		r.err = err
		return nil, err
	}
	// Trailing zeros (preallocation) are not counted as dropped data.
	end := max(r.dataOff+int64(r.nonZeroEnd), dropFrom)
	if dropFrom < r.dataOff {
		// The dropped record began in blocks already consumed.
		end = max(end, r.dataOff)
	}
	r.tornOff, r.tornDropped = dropFrom, end-dropFrom

	q := r.findIntact(int(fragOff-r.dataOff), chainFrom-r.dataOff)
	if q < 0 {
		r.tailDamage = nil
		if r.tornDropped > 0 {
			r.tailDamage = r.judgeTail(fragOff, st, dropFrom)
		}
		r.err = io.EOF
		return nil, io.EOF
	}
	r.tailDamage = nil
	r.resumeAt, r.skipFrom = r.dataOff+int64(q), dropFrom
	return nil, base.CorruptionErrorf(r.fileName, errOff, format, args...)
}

// findIntact returns the index in r.data of the first intact record after
// the bad fragment at index bad, or -1. See the package documentation for
// where it looks.
func (r *Reader) findIntact(bad int, chainFrom int64) int {
	d := r.data
	badBlockEnd := bad + blockRemaining(r.dataOff+int64(bad))
	// (1) The chain of the damaged block.
	if chainFrom >= int64(bad) && chainFrom < int64(badBlockEnd) {
		if q := r.followChain(int(chainFrom), badBlockEnd); q >= 0 {
			return q
		}
	}
	// (2) Every offset of the rest of the damaged block.
	for i := bad + 1; i+HeaderSize <= min(badBlockEnd, len(d)); i++ {
		if r.intactAt(i) {
			return i
		}
	}
	// (3) The chain from every later block boundary.
	for b := badBlockEnd; b < len(d); b += BlockSize {
		if q := r.followChain(b, b+BlockSize); q >= 0 {
			return q
		}
	}
	return -1
}

// followChain walks valid fragments from index i up to blockEnd and returns
// the first one that starts an intact record, or -1.
func (r *Reader) followChain(i, blockEnd int) int {
	for i < len(r.data) && blockEnd-i >= HeaderSize {
		typ, n, st := parseFragment(r.data, i, blockEnd-i)
		if st != fragOK {
			return -1
		}
		if (typ == fullFragment || typ == firstFragment) && r.intactAt(i) {
			return i
		}
		i += HeaderSize + n
	}
	return -1
}

// intactAt reports whether a complete, intact record starts at index i,
// following the same rules as Next so that resuming there returns it.
func (r *Reader) intactAt(i int) bool {
	if blockRemaining(r.dataOff+int64(i)) < HeaderSize {
		return false
	}
	first := true
	for i < len(r.data) {
		rem := blockRemaining(r.dataOff + int64(i))
		if rem < HeaderSize {
			i += rem
			continue
		}
		typ, n, st := parseFragment(r.data, i, rem)
		if st != fragOK {
			return false
		}
		switch {
		case first && typ == fullFragment:
			return true
		case first && typ == firstFragment:
			first = false
		case !first && typ == middleFragment:
		case !first && typ == lastFragment:
			return true
		default:
			return false
		}
		i += HeaderSize + n
	}
	return false
}

// Offset returns the file offset at which the record last returned by Next
// starts.
func (r *Reader) Offset() int64 { return r.recOff }

// EndOffset returns the file offset just past the last fragment of the record
// last returned by Next.
func (r *Reader) EndOffset() int64 { return r.recEnd }

// TailDamage returns, after Next returned io.EOF, the damage that ended the
// log when the dropped tail cannot be what a crash in the middle of an
// append leaves (see the package documentation for the rule): a
// *base.CorruptionError naming the file, the offset where the dropped
// record begins and what is wrong with it. It returns nil when the file
// ended cleanly or the tail is a torn write. A caller that must not lose a
// record that was synced — the MANIFEST always, the WAL under its default
// recovery mode — treats a non-nil TailDamage as corruption.
func (r *Reader) TailDamage() error { return r.tailDamage }

// sectorSize is the unit a disk writes whole or not at all: a power loss
// in the middle of an append leaves each sector of it either written or
// reading as zeros, never half of one (a sector cut short fails the
// drive's own checksum and reads as an IO error, not as other bytes).
const sectorSize = 512

// judgeTail decides whether the tail dropped from dropFrom, which ends the
// log because no intact record follows the bad fragment at fragOff (status
// st), can be a torn append, and returns nil if so, or the damage. It runs
// after loadRest, so r.data holds the rest of the file. The rule is the
// package documentation's; each return says which part of it applies.
func (r *Reader) judgeTail(fragOff int64, st fragStatus, dropFrom int64) error {
	if st == fragMissing || st == fragTruncatedHeader {
		// The file ends inside the record: the append was cut short.
		return nil
	}
	d := r.data
	i := int(fragOff - r.dataOff)
	// The header is all in the file (st says so); what it may be worth is
	// decided below.
	h := d[i : i+HeaderSize]
	sum := binary.LittleEndian.Uint32(h)
	length := int(binary.LittleEndian.Uint16(h[4:]))
	typ := h[6]
	where := ""
	if fragOff != dropFrom {
		where = fmt.Sprintf(" (its fragment at offset %d)", fragOff)
	}
	damaged := func(format string, args ...any) error {
		return base.CorruptionErrorf(r.fileName, dropFrom, "%s%s: the record was written whole and damaged afterwards, not torn by a crash",
			fmt.Sprintf(format, args...), where)
	}
	// lengthDamaged is the one damage a cut record can show: a checksum
	// that matches at a length one byte away proves the record complete
	// and its length field damaged (a torn append never changes a header).
	lengthDamaged := func() error {
		if n, ok := r.checksumMatchesAt(i, sum, typ, length); ok {
			return damaged("record header's length is %d but its checksum matches %d bytes: the length field is damaged", length, n)
		}
		return nil
	}
	if r.mappedTear(fragOff) {
		// A copy into space the file was grown by, cut short; unless its
		// header, written whole, has a damaged length that makes it look
		// cut.
		if fragOff+HeaderSize <= r.dataOff+int64(r.nonZeroEnd) {
			return lengthDamaged()
		}
		return nil
	}
	if r.zeroedSector(i, i+HeaderSize) {
		// A sector under the header never reached the disk.
		return nil
	}
	// The header is as it was written, so it must be one the writer
	// writes.
	switch st {
	case fragOK:
		return damaged("fragment of type %d at offset %d does not continue the record", typ, fragOff)
	case fragZeroHeader:
		return damaged("zeroed fragment header followed by data in its sector")
	case fragBadType:
		return damaged("record header has unknown fragment type %d", typ)
	case fragBadLength:
		return damaged("record header's length %d runs past its block", length)
	}
	// st is fragTruncatedPayload or fragBadChecksum: a valid header.
	end := min(i+HeaderSize+length, len(d))
	if st == fragBadChecksum && !r.zeroedSector(i, end) {
		return damaged("record is complete but fails its checksum")
	}
	// The payload runs past the end of the file or holds a sector that
	// never reached the disk: a torn append, unless what was damaged is
	// the length field itself.
	return lengthDamaged()
}

// mappedTear reports whether the bad fragment at fragOff can be the cut
// end of a copy into space the file was grown by (SetMappedWriteUnit): the
// file's size is a multiple of the unit, everything from inside the
// fragment's block, after its start, to the end of the file reads as
// zeros, and the fragment is cut there: its header, or its payload as long
// as the header says, runs past the last non-zero byte. A fragment present
// to its last byte that fails its checksum is not a cut copy but damage
// (unless its last bytes are zeros of its own, which the rule cannot tell
// from a cut, as with zeroed sectors).
func (r *Reader) mappedTear(fragOff int64) bool {
	if r.mappedUnit == 0 || !r.loaded {
		return false
	}
	fileEnd := r.dataOff + int64(len(r.data))
	if fileEnd == 0 || fileEnd%r.mappedUnit != 0 {
		return false
	}
	lastData := r.dataOff + int64(r.nonZeroEnd) // just past the last non-zero byte
	blockEnd := (fragOff/BlockSize + 1) * BlockSize
	if lastData <= fragOff || lastData > blockEnd {
		return false
	}
	if lastData < fragOff+HeaderSize {
		return true // cut inside the header
	}
	i := int(fragOff - r.dataOff)
	length := int64(binary.LittleEndian.Uint16(r.data[i+4:]))
	return lastData < fragOff+HeaderSize+length
}

// zeroedSector reports whether a sector overlapping d[lo:hi] reads as zeros
// from lo (or from its start, if later) to its end or the end of the file:
// what a sector of an append that never reached the disk leaves, since
// every byte the append put in it then reads as zero, those after the
// fragment too. Bytes before lo may belong to earlier writes and do not
// count.
func (r *Reader) zeroedSector(lo, hi int) bool {
	d := r.data
	for s := lo; s < hi && s < len(d); {
		next := s + sectorSize - int((r.dataOff+int64(s))%sectorSize)
		zero := true
		for _, c := range d[s:min(next, len(d))] {
			if c != 0 {
				zero = false
				break
			}
		}
		if zero {
			return true
		}
		s = next
	}
	return false
}

// checksumMatchesAt reports whether the checksum of the fragment at d[i],
// whose header says length, matches its type and payload at another length
// that differs from length in one of its two bytes and fits in the file
// and the block, and returns that length. A torn append never changes a
// header, so a match proves the record complete and its length field
// damaged. (The chance that a torn record matches by accident is below
// 2^-23: at most 510 lengths, each matching with probability 2^-32.)
func (r *Reader) checksumMatchesAt(i int, sum uint32, typ byte, length int) (int, bool) {
	d := r.data
	avail := min(blockRemaining(r.dataOff+int64(i)), len(d)-i) - HeaderSize
	var cands []int
	for b := range 256 {
		for _, n := range [2]int{length&0xff00 | b, length&0xff | b<<8} {
			if n != length && n <= avail {
				cands = append(cands, n)
			}
		}
	}
	slices.Sort(cands)
	cands = slices.Compact(cands)
	payload := d[i+HeaderSize:]
	c := checksum.CRC32C([]byte{typ})
	done := 0
	for _, n := range cands {
		c = checksum.ExtendCRC32C(c, payload[done:n])
		done = n
		if checksum.Mask(c) == sum {
			return n, true
		}
	}
	return 0, false
}

// TornTail describes the tail dropped when Next returned io.EOF: offset is
// where the dropped bytes begin and dropped how many there are, not counting
// trailing zeros; dropped is 0 when the file ended cleanly. After a
// CorruptionError it describes what a caller that stops there would drop.
func (r *Reader) TornTail() (offset int64, dropped int64) {
	return r.tornOff, r.tornDropped
}

// SkippedBytes returns how many bytes calls to Next after a CorruptionError
// have skipped so far.
func (r *Reader) SkippedBytes() int64 { return r.skipped }
