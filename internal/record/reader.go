package record

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"

	"github.com/shaledb/shale/internal/base"
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
)

var fragStatusMsg = [...]string{
	fragOK:               "ok",
	fragTruncatedHeader:  "truncated fragment header",
	fragZeroHeader:       "zeroed fragment header",
	fragBadLength:        "fragment length crosses the block boundary",
	fragTruncatedPayload: "truncated fragment payload",
	fragBadType:          "unknown fragment type",
	fragBadChecksum:      "fragment checksum mismatch",
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
	if maskCRC(crc32.Checksum(d[i+6:i+HeaderSize+length], castagnoli)) != sum {
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
	// badWhole is set while damage() handles a fragment that is whole (its
	// header and every payload byte are in the file) but fails its
	// checksum, with no zeroed sector in it; tailBitRot keeps it when that
	// fragment begins the torn tail. See TailChecksumMismatch.
	badWhole, tailBitRot bool
	err                  error // sticky: an IO error, or io.EOF at the end
}

// NewReader returns a Reader of the file read from r, which must be
// positioned at offset 0. fileName is used in corruption errors.
func NewReader(r io.Reader, fileName string) *Reader {
	return &Reader{r: r, fileName: fileName, resumeAt: -1}
}

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
				return r.damage(recOff, f.off, dropFrom, f.off,
					"record at offset %d is truncated: missing its LAST fragment", recOff)
			}
			r.tornOff, r.tornDropped = f.off, 0
			r.err = io.EOF
			return nil, io.EOF
		}
		if f.st != fragOK {
			// Follow the bad fragment's length when it stays in its block;
			// findIntact checks that bound.
			r.badWhole = f.st == fragBadChecksum && !hasZeroSector(r.data[r.pos:r.pos+int(f.end-f.off)], f.off)
			rec, err := r.damage(f.off, f.off, dropFrom, f.end, "%s", fragStatusMsg[f.st])
			r.badWhole = false
			return rec, err
		}
		switch f.typ {
		case fullFragment, firstFragment:
			if inRecord {
				// The fragment itself may start an intact record, so the
				// search starts at it.
				return r.damage(recOff, f.off, dropFrom, f.off,
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
				return r.damage(f.off, f.off, f.off, f.end, "fragment of type %d outside a record", f.typ)
			}
			r.rec = append(r.rec, f.payload...)
			if f.typ == lastFragment {
				r.recOff, r.recEnd = recOff, f.end
				return r.rec, nil
			}
		}
	}
}

// damage handles a bad fragment at fragOff: it reads the rest of the file and
// decides between corruption (an intact record follows) and a torn tail.
// errOff is the offset the error names (the bad fragment, or the start of a
// record cut short); dropFrom is where the record being dropped began; the
// search for an intact record follows the fragment chain from chainFrom.
func (r *Reader) damage(errOff, fragOff, dropFrom, chainFrom int64, format string, args ...any) ([]byte, error) {
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
		r.tailBitRot = r.badWhole
		r.err = io.EOF
		return nil, io.EOF
	}
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

// TailChecksumMismatch reports, after Next returned io.EOF, whether the
// dropped tail began with a fragment that was whole — header and every
// payload byte present, no zeroed sector — yet failed its checksum. A write
// cut short by a crash leaves a truncated fragment, or zeros where sectors
// never reached the disk; a whole fragment with a wrong checksum is damage
// to data once written (a flipped bit), and a reader that must not lose a
// synced record (the MANIFEST) treats it as corruption.
func (r *Reader) TailChecksumMismatch() bool { return r.tailBitRot }

// hasZeroSector reports whether frag, the bytes of a fragment starting at
// file offset off, holds the zeros that a write cut short by a power loss
// leaves where 512-byte sectors were never written: a sector whose bytes
// inside the fragment are all zero. The sectors where the fragment begins
// and ends count with the part of them the fragment covers, since a small
// record crosses at most one sector boundary and a sector never written
// there zeroes only part of it.
func hasZeroSector(frag []byte, off int64) bool {
	const sector = 512
	for i := 0; i < len(frag); {
		next := min(i+sector-int((off+int64(i))%sector), len(frag))
		zero := true
		for _, c := range frag[i:next] {
			if c != 0 {
				zero = false
				break
			}
		}
		if zero {
			return true
		}
		i = next
	}
	return false
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
