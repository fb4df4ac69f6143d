package record

import (
	"encoding/binary"
	"io"

	"github.com/shaledb/shale/internal/checksum"
)

const (
	// BlockSize is the size of the blocks a record file is divided into.
	BlockSize = 32 << 10
	// HeaderSize is the size of a fragment header.
	HeaderSize = 7
)

// Fragment types.
const (
	fullFragment   = 1
	firstFragment  = 2
	middleFragment = 3
	lastFragment   = 4
)

// Writer appends records to a block-framed file. Records are buffered until
// Flush, which hands everything to the underlying io.Writer in one Write.
// A Writer is not safe for concurrent use.
type Writer struct {
	w        io.Writer
	buf      []byte // framed bytes not yet written
	flushed  int64  // bytes handed to w so far
	blockOff int    // offset within the current block of the next byte
	// err is sticky: after a failed Write the file holds an unknown prefix
	// of buf, so no later record can be placed correctly.
	err error
}

// NewWriter returns a Writer that appends to w, which must be positioned at
// offset 0 of an empty file.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w}
}

// NewWriterAt returns a Writer that continues a file whose first offset
// bytes are already written (ending with a whole record): w must be
// positioned at offset. Records are framed from the block offset there on.
func NewWriterAt(w io.Writer, offset int64) *Writer {
	return &Writer{w: w, flushed: offset, blockOff: int(offset % BlockSize)}
}

// WriteRecord frames p and appends it to the buffer; it returns the file
// offset at which the record starts. Nothing reaches the file until Flush.
func (w *Writer) WriteRecord(p []byte) (offset int64, err error) {
	if w.err != nil {
		return 0, w.err
	}
	if rem := BlockSize - w.blockOff; rem < HeaderSize {
		// Too little room for a header: pad the block with zeros.
		for range rem {
			w.buf = append(w.buf, 0)
		}
		w.blockOff = 0
	}
	offset = w.Size()
	first := true
	for {
		room := BlockSize - w.blockOff - HeaderSize
		n := min(len(p), room)
		last := n == len(p)
		var typ byte
		switch {
		case first && last:
			typ = fullFragment
		case first:
			typ = firstFragment
		case last:
			typ = lastFragment
		default:
			typ = middleFragment
		}
		i := len(w.buf)
		w.buf = append(w.buf, 0, 0, 0, 0, byte(n), byte(n>>8), typ)
		w.buf = append(w.buf, p[:n]...)
		// The checksum (masked CRC-32C) covers the type byte and the
		// payload, which are contiguous in buf.
		binary.LittleEndian.PutUint32(w.buf[i:], checksum.MaskedCRC32C(w.buf[i+6:]))
		p = p[n:]
		w.blockOff += HeaderSize + n
		if w.blockOff == BlockSize {
			w.blockOff = 0
		}
		if last {
			return offset, nil
		}
		first = false
	}
}

// Flush writes everything buffered with a single Write call, so that a group
// of records committed together costs one system call. It does not sync.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) == 0 {
		return nil
	}
	n, err := w.w.Write(w.buf)
	if err == nil && n != len(w.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = err
		return err
	}
	w.flushed += int64(len(w.buf))
	if cap(w.buf) > 4<<20 {
		// Do not pin the memory of one huge batch for the life of the file.
		w.buf = nil
	} else {
		w.buf = w.buf[:0]
	}
	return nil
}

// Size returns the file size once everything buffered is flushed.
func (w *Writer) Size() int64 {
	return w.flushed + int64(len(w.buf))
}

// Buffered returns the number of framed bytes not yet flushed.
func (w *Writer) Buffered() int { return len(w.buf) }

// SwapBuffer returns the framed bytes not yet flushed, counting them as
// flushed, and continues with next (emptied) as its buffer. It lets a caller
// write the bytes itself, off the framing path, without copying them.
func (w *Writer) SwapBuffer(next []byte) []byte {
	data := w.buf
	w.flushed += int64(len(data))
	w.buf = next[:0]
	return data
}
