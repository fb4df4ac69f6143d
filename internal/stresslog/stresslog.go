package stresslog

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/vfs"
)

// OpKind says what one operation of a batch does.
type OpKind uint8

// The operations a logged batch may hold.
const (
	// OpPut sets Key to a value of Arg bytes (the caller derives the bytes
	// from the key and the batch).
	OpPut OpKind = 1
	// OpDelete deletes Key.
	OpDelete OpKind = 2
	// OpDeleteRange deletes every key in [Key, Arg).
	OpDeleteRange OpKind = 3
	// OpSecondaryDelete is DeleteBySecondaryRange over the values the same
	// writer (of the same generation) put in its batches [Key, Arg): it
	// deletes every key whose newest value one of those batches wrote.
	OpSecondaryDelete OpKind = 4
	// OpMerge merges into Key an operand the caller derives from the key
	// and the batch.
	OpMerge OpKind = 5
)

// Op is one operation of a logged batch.
type Op struct {
	Kind OpKind
	Key  uint32
	// Arg is the value length of an OpPut and the end key of an
	// OpDeleteRange.
	Arg uint32
}

// Batch is a batch read back from a log.
type Batch struct {
	// Seq numbers the batch within its log, from 1.
	Seq uint64
	Ops []Op
	// Acked is set when the DB acknowledged the batch; only the last batch
	// of a log can be unacknowledged (in flight at the kill).
	Acked bool
}

// Log is what Read found in a log file.
type Log struct {
	Batches []Batch
	// Torn is set when the file ended in an incomplete record (or an
	// incomplete header), which Read ignored.
	Torn bool
}

// InFlight returns the batch that was pending without an ack, or nil.
func (l *Log) InFlight() *Batch {
	if n := len(l.Batches); n > 0 && !l.Batches[n-1].Acked {
		return &l.Batches[n-1]
	}
	return nil
}

const (
	magic        = "shSTRESS"
	version      = 1
	headerLen    = len(magic) + 1
	recHeaderLen = 8
	// MaxPayload bounds a record's payload; Read treats a larger length as
	// damage.
	MaxPayload = 1 << 20

	typePending = 'P'
	typeAcked   = 'A'
)

// Writer appends records to one log file. It is not safe for concurrent use:
// each writer goroutine owns its own log.
type Writer struct {
	f    vfs.File
	name string
	buf  []byte
	seq  uint64 // the last pending seq
}

// Create creates (or truncates) the log file name on fs and writes its
// header.
func Create(fs vfs.FS, name string) (*Writer, error) {
	f, err := fs.Create(name)
	if err != nil {
		return nil, fmt.Errorf("shale: stresslog: creating %s: %w", name, err)
	}
	w := &Writer{f: f, name: name, buf: make([]byte, 0, 256)}
	hdr := append([]byte(magic), version)
	if _, err := f.Write(hdr); err != nil {
		f.Close()
		return nil, fmt.Errorf("shale: stresslog: writing the header of %s: %w", name, err)
	}
	return w, nil
}

// Pending records that the batch numbered seq, made of ops, is about to be
// committed. seq must be one more than the previous Pending's.
func (w *Writer) Pending(seq uint64, ops []Op) error {
	if seq != w.seq+1 {
		return fmt.Errorf("shale: stresslog: %s: pending batch %d after batch %d", w.name, seq, w.seq)
	}
	p := w.begin()
	p = append(p, typePending)
	p = binary.AppendUvarint(p, seq)
	p = binary.AppendUvarint(p, uint64(len(ops)))
	for _, op := range ops {
		p = append(p, byte(op.Kind))
		p = binary.AppendUvarint(p, uint64(op.Key))
		p = binary.AppendUvarint(p, uint64(op.Arg))
	}
	if err := w.finish(p); err != nil {
		return err
	}
	w.seq = seq
	return nil
}

// Acked records that the DB acknowledged the batch numbered seq, which must
// be the last Pending one.
func (w *Writer) Acked(seq uint64) error {
	if seq != w.seq {
		return fmt.Errorf("shale: stresslog: %s: ack of batch %d, but batch %d is pending", w.name, seq, w.seq)
	}
	p := w.begin()
	p = append(p, typeAcked)
	p = binary.AppendUvarint(p, seq)
	return w.finish(p)
}

// Close closes the file.
func (w *Writer) Close() error { return w.f.Close() }

func (w *Writer) begin() []byte {
	return append(w.buf[:0], make([]byte, recHeaderLen)...)
}

// finish frames the record in p (header space first) and writes it with one
// Write call, so that a killed process leaves it whole or torn at the end.
func (w *Writer) finish(p []byte) error {
	n := len(p) - recHeaderLen
	if n > MaxPayload {
		return fmt.Errorf("shale: stresslog: %s: record of %d bytes exceeds %d", w.name, n, MaxPayload)
	}
	binary.LittleEndian.PutUint32(p[4:8], encodeLength(n))
	binary.LittleEndian.PutUint32(p[0:4], checksum.CRC32C(p[4:]))
	w.buf = p
	if _, err := w.f.Write(p); err != nil {
		return fmt.Errorf("shale: stresslog: appending to %s: %w", w.name, err)
	}
	return nil
}

// Read reads the log file name. A torn last record is ignored (Log.Torn);
// any other damage, or records out of order, is an error naming the file
// and offset.
func Read(fs vfs.FS, name string) (*Log, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, fmt.Errorf("shale: stresslog: opening %s: %w", name, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("shale: stresslog: size of %s: %w", name, err)
	}
	data := make([]byte, size)
	n, err := f.ReadAt(data, 0)
	if n < len(data) && err != nil && err != io.EOF {
		return nil, fmt.Errorf("shale: stresslog: reading %s: %w", name, err)
	}
	return Decode(name, data[:n])
}

// Decode parses the contents of a log file; name only labels errors.
func Decode(name string, data []byte) (*Log, error) {
	l := &Log{}
	if len(data) < headerLen {
		// Killed before the header was written.
		if string(data) != magic[:len(data)] {
			return nil, fmt.Errorf("shale: stresslog: %s: bad magic in a %d-byte file", name, len(data))
		}
		l.Torn = len(data) > 0
		return l, nil
	}
	if string(data[:len(magic)]) != magic {
		return nil, fmt.Errorf("shale: stresslog: %s: bad magic %q", name, data[:len(magic)])
	}
	if v := data[len(magic)]; v != version {
		return nil, fmt.Errorf("shale: stresslog: %s: unknown format version %d", name, v)
	}
	off := headerLen
	for off < len(data) {
		rest := data[off:]
		if len(rest) < recHeaderLen {
			l.Torn = true
			return l, nil
		}
		n, ok := decodeLength(binary.LittleEndian.Uint32(rest[4:8]))
		if !ok || n == 0 || n > MaxPayload {
			// A torn write shortens the file; it never leaves a wrong
			// length, and a damaged one must not pass for a torn tail.
			return nil, fmt.Errorf("shale: stresslog: %s: offset %d: record length %d out of range", name, off, n)
		}
		if len(rest) < recHeaderLen+n {
			l.Torn = true
			return l, nil
		}
		if checksum.CRC32C(rest[4:recHeaderLen+n]) != binary.LittleEndian.Uint32(rest[0:4]) {
			if len(rest) == recHeaderLen+n {
				l.Torn = true // the last record: torn as it was written
				return l, nil
			}
			return nil, fmt.Errorf("shale: stresslog: %s: offset %d: checksum mismatch with %d bytes after it", name, off, len(rest)-recHeaderLen-n)
		}
		if err := l.apply(rest[recHeaderLen : recHeaderLen+n]); err != nil {
			return nil, fmt.Errorf("shale: stresslog: %s: offset %d: %w", name, off, err)
		}
		off += recHeaderLen + n
	}
	return l, nil
}

// apply adds one record's payload to l, checking the order of records.
func (l *Log) apply(p []byte) error {
	typ := p[0]
	p = p[1:]
	seq, ok := uvarint(&p)
	if !ok {
		return fmt.Errorf("truncated seq")
	}
	last := l.InFlight()
	switch typ {
	case typePending:
		if last != nil {
			return fmt.Errorf("pending batch %d while batch %d waits for its ack", seq, last.Seq)
		}
		if want := uint64(len(l.Batches)) + 1; seq != want {
			return fmt.Errorf("pending batch %d, want %d", seq, want)
		}
		count, ok := uvarint(&p)
		if !ok || count > uint64(len(p)) {
			return fmt.Errorf("batch %d: bad op count", seq)
		}
		ops := make([]Op, 0, count)
		for range count {
			if len(p) == 0 {
				return fmt.Errorf("batch %d: truncated op", seq)
			}
			kind := OpKind(p[0])
			p = p[1:]
			key, ok1 := uvarint(&p)
			arg, ok2 := uvarint(&p)
			if !ok1 || !ok2 || key > 1<<32-1 || arg > 1<<32-1 {
				return fmt.Errorf("batch %d: truncated or oversized op", seq)
			}
			if kind < OpPut || kind > OpMerge {
				return fmt.Errorf("batch %d: unknown op kind %d", seq, kind)
			}
			ops = append(ops, Op{Kind: kind, Key: uint32(key), Arg: uint32(arg)})
		}
		l.Batches = append(l.Batches, Batch{Seq: seq, Ops: ops})
	case typeAcked:
		if last == nil || last.Seq != seq {
			return fmt.Errorf("ack of batch %d, which is not pending", seq)
		}
		last.Acked = true
	default:
		return fmt.Errorf("unknown record type %q", typ)
	}
	if len(p) != 0 {
		return fmt.Errorf("%d trailing bytes in a record", len(p))
	}
	return nil
}

// encodeLength puts a check byte above the 24-bit length, so that damage to
// the length (which would otherwise make a record seem to run past the end of
// the file, like a torn one) is detected before the payload's checksum can be.
func encodeLength(n int) uint32 {
	return uint32(n) | uint32(lengthCheck(uint32(n)))<<24
}

func decodeLength(v uint32) (int, bool) {
	n := v & (1<<24 - 1)
	return int(n), byte(v>>24) == lengthCheck(n)
}

func lengthCheck(n uint32) byte {
	return byte(n) ^ byte(n>>8) ^ byte(n>>16) ^ 0xa5
}

func uvarint(p *[]byte) (uint64, bool) {
	v, n := binary.Uvarint(*p)
	if n <= 0 {
		return 0, false
	}
	*p = (*p)[n:]
	return v, true
}
