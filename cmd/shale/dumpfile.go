package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// The dump format is what `shale dump` writes and `shale load` reads: the
// logical contents of a database (what an iterator sees at one snapshot,
// merges resolved and range deletions applied), portable between machines,
// shale versions and option sets, since it holds no internal key, seqnum or
// table layout. Integers are little-endian; uvarint is Go's
// encoding/binary varint (LEB128), at most 10 bytes.
//
//	+----------------------+---------------------+-------------------+
//	| magic "SHALEDMP" (8) | version uint32 (=1) | flags uint32 (=0) |   header, 16 bytes
//	+----------------------+---------------------+-------------------+
//	| entry ...                                                      |
//	+------------+----------------+------------------+-----+-------+---------+
//	| kind 1 (1) | uvarint keyLen | uvarint valueLen | key | value | crc (4) |  entry
//	+------------+----------------+------------------+-----+-------+---------+
//	| kind 0 (1) | uvarint count  | crc (4)                        |   end
//	+------------+----------------+--------------------------------+
//
// An entry's crc is the CRC-32C (Castagnoli) of its bytes from the kind
// through the value, and the end record's that of the whole file from the
// magic through the count: a damaged entry is reported at its own offset,
// and a cut, reordered or spliced file fails at the end. Entries are in
// strictly increasing bytewise key order; count is their number. Kind 1
// is a key and its value; kinds 2 to 255 are reserved for later versions
// (a range deletion, a merge operand), which a version-1 reader refuses.
// Nothing may follow the end record. The flags are reserved and must be 0.

// dumpMagic starts every dump file.
const dumpMagic = "SHALEDMP"

// dumpVersion is the version this code writes and the newest it reads.
const dumpVersion = 1

const (
	dumpHeaderLen = len(dumpMagic) + 8
	dumpKindEnd   = 0
	dumpKindSet   = 1
)

var dumpCRCTable = crc32.MakeTable(crc32.Castagnoli)

// errDumpCorrupt is matched (errors.Is) by every error reporting a damaged
// or foreign dump file.
var errDumpCorrupt = errors.New("damaged dump file")

// dumpCorruptf reports damage of the dump named name at offset off.
func dumpCorruptf(name string, off int64, format string, args ...any) error {
	return fmt.Errorf("%w %s at offset %d: %s", errDumpCorrupt, name, off, fmt.Sprintf(format, args...))
}

// dumpWriter writes a dump file.
type dumpWriter struct {
	w       *bufio.Writer
	crc     uint32 // of everything written so far
	count   uint64
	lastKey []byte
	started bool
	buf     []byte
}

func newDumpWriter(w io.Writer) *dumpWriter {
	return &dumpWriter{w: bufio.NewWriterSize(w, 256<<10)}
}

func (d *dumpWriter) write(b []byte) error {
	d.crc = crc32.Update(d.crc, dumpCRCTable, b)
	_, err := d.w.Write(b)
	return err
}

func (d *dumpWriter) header() error {
	h := make([]byte, 0, dumpHeaderLen)
	h = append(h, dumpMagic...)
	h = binary.LittleEndian.AppendUint32(h, dumpVersion)
	h = binary.LittleEndian.AppendUint32(h, 0)
	d.started = true
	return d.write(h)
}

// add writes one entry; keys must come in increasing order.
func (d *dumpWriter) add(key, value []byte) error {
	if !d.started {
		if err := d.header(); err != nil {
			return err
		}
	}
	if d.count > 0 && string(key) <= string(d.lastKey) {
		return fmt.Errorf("dump: key %q does not sort after %q", key, d.lastKey)
	}
	d.lastKey = append(d.lastKey[:0], key...)
	b := append(d.buf[:0], dumpKindSet)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = binary.AppendUvarint(b, uint64(len(value)))
	b = append(b, key...)
	b = append(b, value...)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, dumpCRCTable))
	d.buf = b
	d.count++
	return d.write(b)
}

// finish writes the end record and flushes.
func (d *dumpWriter) finish() error {
	if !d.started {
		if err := d.header(); err != nil {
			return err
		}
	}
	b := binary.AppendUvarint([]byte{dumpKindEnd}, d.count)
	if err := d.write(b); err != nil {
		return err
	}
	if _, err := d.w.Write(binary.LittleEndian.AppendUint32(nil, d.crc)); err != nil {
		return err
	}
	return d.w.Flush()
}

// dumpReader reads a dump file, checking everything the format promises.
type dumpReader struct {
	r       *bufio.Reader
	name    string
	off     int64  // of the next unread byte
	crc     uint32 // of everything read so far
	count   uint64
	lastKey []byte
	done    bool
	key     []byte
	value   []byte
	rec     []byte
}

// dumpChunk bounds what one read allocates ahead of the data arriving: a
// length field claiming gigabytes in a short file costs no more than this.
const dumpChunk = 1 << 20

// newDumpReader reads and checks the header of the dump in r; name names
// the file in errors.
func newDumpReader(r io.Reader, name string) (*dumpReader, error) {
	d := &dumpReader{r: bufio.NewReaderSize(r, 256<<10), name: name}
	h := make([]byte, dumpHeaderLen)
	if n, err := io.ReadFull(d.r, h); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, dumpCorruptf(name, int64(n), "file of %d bytes is too short for a dump header", n)
		}
		return nil, fmt.Errorf("reading dump %s: %w", name, err)
	}
	if string(h[:len(dumpMagic)]) != dumpMagic {
		return nil, dumpCorruptf(name, 0, "no dump magic (not a file written by shale dump)")
	}
	if v := binary.LittleEndian.Uint32(h[8:]); v != dumpVersion {
		return nil, dumpCorruptf(name, 8, "dump format version %d; this shale reads version %d", v, dumpVersion)
	}
	if f := binary.LittleEndian.Uint32(h[12:]); f != 0 {
		return nil, dumpCorruptf(name, 12, "unknown flags %#x", f)
	}
	d.crc = crc32.Update(0, dumpCRCTable, h)
	d.off = int64(dumpHeaderLen)
	return d, nil
}

// readN appends n bytes of the record to d.rec, growing it only as bytes
// arrive.
func (d *dumpReader) readN(n uint64, start int64) error {
	for n > 0 {
		c := min(n, dumpChunk)
		l := len(d.rec)
		d.rec = append(d.rec, make([]byte, c)...)
		if _, err := io.ReadFull(d.r, d.rec[l:]); err != nil {
			return d.readErr(err, start, "entry")
		}
		n -= c
	}
	return nil
}

func (d *dumpReader) readErr(err error, start int64, what string) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return dumpCorruptf(d.name, start, "the file ends inside the %s (truncated dump)", what)
	}
	return fmt.Errorf("reading dump %s: %w", d.name, err)
}

func (d *dumpReader) uvarint(start int64, what string) (uint64, error) {
	var v uint64
	for i := 0; ; i++ {
		c, err := d.r.ReadByte()
		if err != nil {
			return 0, d.readErr(err, start, what)
		}
		d.rec = append(d.rec, c)
		if i == binary.MaxVarintLen64-1 && c > 1 {
			return 0, dumpCorruptf(d.name, start, "%s length overflows 64 bits", what)
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, nil
		}
	}
}

// next reads the next entry: false at the end record (with nil error) or
// on an error. Key and Value are valid until the next call.
func (d *dumpReader) next() (bool, error) {
	if d.done {
		return false, nil
	}
	start := d.off
	d.rec = d.rec[:0]
	kind, err := d.r.ReadByte()
	if err != nil {
		return false, d.readErr(err, start, "end record (no end record: truncated dump)")
	}
	d.rec = append(d.rec, kind)
	switch kind {
	case dumpKindEnd:
		n, err := d.uvarint(start, "end record")
		if err != nil {
			return false, err
		}
		var sum [4]byte
		if _, err := io.ReadFull(d.r, sum[:]); err != nil {
			return false, d.readErr(err, start, "end record")
		}
		crc := crc32.Update(d.crc, dumpCRCTable, d.rec)
		if got := binary.LittleEndian.Uint32(sum[:]); got != crc {
			return false, dumpCorruptf(d.name, start, "whole-file checksum %#08x, computed %#08x", got, crc)
		}
		if n != d.count {
			return false, dumpCorruptf(d.name, start, "the end record counts %d entries, the file holds %d", n, d.count)
		}
		if _, err := d.r.ReadByte(); err != io.EOF {
			if err != nil {
				return false, fmt.Errorf("reading dump %s: %w", d.name, err)
			}
			return false, dumpCorruptf(d.name, start+int64(len(d.rec))+4, "bytes follow the end record")
		}
		d.done = true
		return false, nil
	case dumpKindSet:
	default:
		return false, dumpCorruptf(d.name, start, "entry kind %d is not one this version reads", kind)
	}
	kl, err := d.uvarint(start, "entry")
	if err != nil {
		return false, err
	}
	vl, err := d.uvarint(start, "entry")
	if err != nil {
		return false, err
	}
	hdr := len(d.rec)
	if kl > 1<<40 || vl > 1<<40 {
		return false, dumpCorruptf(d.name, start, "entry claims a key of %d and a value of %d bytes", kl, vl)
	}
	if err := d.readN(kl+vl+4, start); err != nil {
		return false, err
	}
	body := d.rec[:len(d.rec)-4]
	if got, want := binary.LittleEndian.Uint32(d.rec[len(d.rec)-4:]), crc32.Checksum(body, dumpCRCTable); got != want {
		return false, dumpCorruptf(d.name, start, "entry checksum %#08x, computed %#08x", got, want)
	}
	d.key = body[hdr : hdr+int(kl)]
	d.value = body[hdr+int(kl):]
	if d.count > 0 && string(d.key) <= string(d.lastKey) {
		return false, dumpCorruptf(d.name, start, "key %q does not sort after the previous key %q", d.key, d.lastKey)
	}
	d.lastKey = append(d.lastKey[:0], d.key...)
	d.crc = crc32.Update(d.crc, dumpCRCTable, d.rec)
	d.off += int64(len(d.rec))
	d.count++
	return true, nil
}
