package blob

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/vfs"
)

// WriterOptions configure a Writer. Zero values take the defaults.
type WriterOptions struct {
	// FileNum is the file's number, recorded in every Index Add returns.
	FileNum base.FileNum
	// FileName names the file in errors.
	FileName string
	// Compression of the values. Default none (RocksDB's
	// blob_compression_type default); a value that does not shrink by 1/8
	// is stored uncompressed.
	Compression Compression
	// Checksum is the checksum type of the file. Default CRC32C.
	Checksum ChecksumType
	// TargetFileSize is the size the file is expected to reach (RocksDB's
	// blob_file_size): the writer preallocates in steps of about this size
	// and trims what is left unused at Close. Default 0: no preallocation.
	TargetFileSize int64
	// BytesPerSync starts writeback of the file every this many bytes, so
	// that the final sync has little left to do. Default 0: never.
	BytesPerSync int64
}

// WriterMetadata describes a finished blob file.
type WriterMetadata struct {
	// FileNum is WriterOptions.FileNum.
	FileNum base.FileNum
	// Count is the number of values, ValueBytes the sum of their
	// (uncompressed) lengths, Size the file size.
	Count, ValueBytes, Size uint64
	// FileChecksum is the checksum of the file's bytes before the footer,
	// of type Checksum (unmasked CRC-32C, or the whole xxhash64), as the
	// footer records it.
	FileChecksum uint64
	Checksum     ChecksumType
}

// Writer writes one blob file: the header at once, a record per Add, the
// footer at Close. Writes are buffered. A Writer is not safe for concurrent
// use.
type Writer struct {
	f      vfs.File
	o      WriterOptions
	sink   block.Sink
	out    *bufio.Writer
	hash   fileHash
	offset uint64
	count  uint64
	values uint64
	// err is the first error; every later call returns it.
	err error
	// zeroEnd is the end of the zeros written ahead (ZeroAhead).
	zeroEnd int64
	closed  bool
	raw     []byte
	compBuf []byte
	lenBuf  [lengthLen]byte
	trailer block.TrailerWriter
}

// writeBufferSize is the Writer's buffer: records are written to the file in
// pieces of about this size, not one call per record.
const writeBufferSize = 256 << 10

// NewWriter returns a Writer that writes a blob file to f, which it owns
// from now on (Close and Abort close it). Invalid options are reported by
// the first Add or Close.
func NewWriter(f vfs.File, o WriterOptions) *Writer {
	if o.Compression == DefaultCompression {
		o.Compression = NoCompression
	}
	if o.Checksum == ChecksumDefault {
		o.Checksum = ChecksumCRC32C
	}
	w := &Writer{f: f, o: o, sink: block.NewSink(f, o.TargetFileSize, o.BytesPerSync)}
	w.out = bufio.NewWriterSize(&w.sink, writeBufferSize)
	if _, ok := typeCode(o.Compression); !ok {
		w.err = base.InvalidArgumentf("shale: blob.WriterOptions.Compression %s is not none, snappy or zstd", o.Compression)
		return w
	}
	if !o.Checksum.Known() {
		w.err = base.InvalidArgumentf("shale: blob.WriterOptions.Checksum %s is not crc32c or xxhash64", o.Checksum)
		return w
	}
	w.hash = newFileHash(o.Checksum)
	w.write(header{checksum: o.Checksum, compression: o.Compression}.encode(nil))
	return w
}

// write appends b to the file through the buffer, adding it to the file
// checksum.
func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	w.hash.write(b)
	if _, err := w.out.Write(b); err != nil {
		w.err = fmt.Errorf("shale: writing blob file %s: %w", w.o.FileName, err)
		return
	}
	w.offset += uint64(len(b))
}

// Add writes a record holding key and value and returns the Index a table
// stores for it. Errors of the file (a failed write, which the buffer may
// report one Add later) stop the Writer: every later call returns the
// first error.
func (w *Writer) Add(key, value []byte) (Index, error) {
	if w.err != nil {
		return Index{}, w.err
	}
	if w.closed {
		return Index{}, fmt.Errorf("shale: blob writer for %s is closed", w.o.FileName)
	}
	if n := uvarintLen(uint64(len(key))) + len(key) + len(value); n > block.MaxLen {
		return Index{}, base.InvalidArgumentf("shale: blob of %d bytes (key and value) above the limit of %d", n, block.MaxLen)
	}
	w.raw = binary.AppendUvarint(w.raw[:0], uint64(len(key)))
	w.raw = append(w.raw, key...)
	w.raw = append(w.raw, value...)
	stored, typ, buf := block.Compress(w.o.Compression, w.raw, w.compBuf)
	w.compBuf = buf
	if len(stored) > block.MaxLen {
		// A compressor that expands past the limit; storing it raw keeps
		// the record within it.
		stored, typ = w.raw, block.TypeNone
	}
	c, _ := compressionOf(typ)
	binary.LittleEndian.PutUint32(w.lenBuf[:], uint32(len(stored)))
	w.write(w.lenBuf[:])
	x := Index{FileNum: w.o.FileNum, Offset: w.offset, Size: uint64(len(stored)), Compression: c}
	w.write(stored)
	w.write(w.trailer.Trailer(w.o.Checksum, stored, typ))
	if w.err != nil {
		return Index{}, w.err
	}
	w.count++
	w.values += uint64(len(value))
	if cap(w.raw) > 4*writeBufferSize {
		// A huge value's buffers are not kept for the small ones.
		w.raw, w.compBuf = nil, nil
	}
	return x, nil
}

// Flush hands the buffered records to the file (the OS), so that a reader
// of the file finds every record Add returned an Index for, and a crash of
// the process loses none of them.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("shale: blob writer for %s is closed", w.o.FileName)
	}
	if err := w.out.Flush(); err != nil {
		w.err = fmt.Errorf("shale: writing blob file %s: %w", w.o.FileName, err)
		return w.err
	}
	return nil
}

// Sync flushes and syncs the data (SyncData): every record added so far
// survives a power loss.
func (w *Writer) Sync() error {
	if err := w.Flush(); err != nil {
		return err
	}
	if err := w.f.SyncData(); err != nil {
		w.err = fmt.Errorf("shale: syncing blob file %s: %w", w.o.FileName, err)
		return w.err
	}
	return nil
}

// ZeroAhead hands the buffered records to the file and writes zeros after
// them up to end (when end is past them and past earlier zeros), without
// moving where records are appended, and starts their writeback. Records
// written later overwrite blocks already allocated and written, inside the
// file's size, so that syncing them changes neither the file's size nor
// its block map: an fdatasync that writes the data only (vfs.WriteZeros).
// Close cuts off the zeros left. An error (a file that cannot write zeros
// at an offset matches vfs.ErrZerosUnsupported) leaves the records as they
// were; zeros are a hint.
func (w *Writer) ZeroAhead(end int64) error {
	if err := w.Flush(); err != nil {
		return err
	}
	from := max(int64(w.offset), w.zeroEnd)
	if end <= from {
		return nil
	}
	// Noted first: zeros written in part still extend the file, and Trim
	// must cut them off.
	w.sink.NoteExtended(end)
	if err := vfs.WriteZeros(w.f, from, end-from); err != nil {
		return err
	}
	w.zeroEnd = end
	_ = w.f.StartWriteback(from, end-from)
	return nil
}

// Count returns the number of records added.
func (w *Writer) Count() uint64 { return w.count }

// Size returns the bytes written so far (header and records, buffered or
// not): the file size short of the footer.
func (w *Writer) Size() uint64 { return w.offset }

// Close finishes the file: it writes the footer, flushes, trims the
// preallocated space, syncs the data (SyncData) and closes the file, which
// is closed even when Close fails.
func (w *Writer) Close() (*WriterMetadata, error) {
	if w.closed {
		return nil, fmt.Errorf("shale: blob writer for %s is closed", w.o.FileName)
	}
	w.closed = true
	m, err := w.finish()
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("shale: closing blob file %s: %w", w.o.FileName, cerr)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

func (w *Writer) finish() (*WriterMetadata, error) {
	if w.err != nil {
		return nil, w.err
	}
	m := &WriterMetadata{FileNum: w.o.FileNum, Count: w.count, ValueBytes: w.values,
		FileChecksum: w.hash.sum(), Checksum: w.o.Checksum}
	w.write(footer{count: w.count, valueBytes: w.values, fileChecksum: m.FileChecksum}.encode(w.o.Checksum, nil))
	if w.err != nil {
		return nil, w.err
	}
	if err := w.out.Flush(); err != nil {
		return nil, fmt.Errorf("shale: writing blob file %s: %w", w.o.FileName, err)
	}
	if err := w.sink.Trim(); err != nil {
		return nil, fmt.Errorf("shale: trimming blob file %s: %w", w.o.FileName, err)
	}
	// The file is only appended to: fdatasync makes its size durable with
	// its data.
	if err := w.f.SyncData(); err != nil {
		return nil, fmt.Errorf("shale: syncing blob file %s: %w", w.o.FileName, err)
	}
	m.Size = w.offset
	return m, nil
}

// Abort closes the file without finishing it; the caller removes it.
func (w *Writer) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	if w.err == nil {
		w.err = errors.New("shale: blob writer aborted")
	}
	w.f.Close()
}
