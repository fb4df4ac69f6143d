package shale

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/vfs"
)

// Whole-file checksums (issue 16, item 4): every table and blob file a
// flush or compaction writes is hashed as its bytes go to the file (by
// checksummedFile, a vfs.File wrapper under the sstable and blob writers,
// which know nothing of it), and the MANIFEST records the value with the
// name of the generator that made it: a table's in its new-file record
// (custom fields 96 and 97), a blob file's in the checksum method and value
// of its addition record (400). VerifyFileChecksums and Check read each
// file whole and compare; computeFileChecksum is the same computation over
// a finished file, for ingestion and backups.

// FileChecksumGenContext is what a FileChecksumGenFactory is told of the
// file a generator is for (RocksDB's FileChecksumGenContext).
type FileChecksumGenContext struct {
	// FileName is the file's path through Options.FS.
	FileName string
	// RequestedChecksumFuncName, when not empty, is the name of the
	// generator wanted: the one a recorded checksum was made by, when a
	// file is verified. A factory may ignore it; a generator of another
	// name then cannot verify the file.
	RequestedChecksumFuncName string
}

// FileChecksumGenerator computes the checksum of one file from its bytes,
// given in order (RocksDB's FileChecksumGenerator). It is used by one
// goroutine.
type FileChecksumGenerator interface {
	// Update adds the next bytes of the file. It must not keep p.
	Update(p []byte)
	// Finalize ends the computation; Update is not called after it.
	Finalize()
	// GetChecksum returns the checksum, after Finalize, as raw bytes.
	GetChecksum() []byte
	// Name names the checksum function (recorded with every value).
	Name() string
}

// FileChecksumGenFactory makes the generator of each table and blob file
// the DB writes (RocksDB's FileChecksumGenFactory). A nil generator means
// the file gets no checksum.
type FileChecksumGenFactory interface {
	CreateFileChecksumGenerator(ctx FileChecksumGenContext) FileChecksumGenerator
	// Name names the factory (file_checksum_gen_factory in OPTIONS).
	Name() string
}

// UnknownFileChecksumFuncName is the FileChecksumFuncName of a file with
// no recorded checksum (RocksDB's kUnknownFileChecksumFuncName); its
// FileChecksum is empty.
const UnknownFileChecksumFuncName = "Unknown"

// FileChecksumCrc32cName is the name of the built-in CRC-32C generator,
// recorded with every checksum it makes (RocksDB's "FileChecksumCrc32c").
const FileChecksumCrc32cName = "FileChecksumCrc32c"

// fileChecksumCrc32cFactoryName is the factory's name in OPTIONS.
const fileChecksumCrc32cFactoryName = "FileChecksumGenCrc32cFactory"

// NewFileChecksumGenCrc32cFactory returns the built-in factory, the
// default: the CRC-32C (Castagnoli, unmasked) of the whole file, recorded
// as its 4 bytes big-endian, as RocksDB's FileChecksumGenCrc32cFactory.
func NewFileChecksumGenCrc32cFactory() FileChecksumGenFactory { return crc32cFactory{} }

type crc32cFactory struct{}

func (crc32cFactory) CreateFileChecksumGenerator(FileChecksumGenContext) FileChecksumGenerator {
	return &crc32cGenerator{}
}
func (crc32cFactory) Name() string { return fileChecksumCrc32cFactoryName }

type crc32cGenerator struct {
	crc uint32
	sum []byte
}

func (g *crc32cGenerator) Update(p []byte) { g.crc = checksum.ExtendCRC32C(g.crc, p) }
func (g *crc32cGenerator) Finalize()       { g.sum = binary.BigEndian.AppendUint32(nil, g.crc) }
func (g *crc32cGenerator) GetChecksum() []byte {
	return g.sum
}
func (g *crc32cGenerator) Name() string { return FileChecksumCrc32cName }

// NoFileChecksums is the FileChecksumGenFactory that records no checksum
// (RocksDB's default, a null factory; shale's nil means CRC-32C). Its
// OPTIONS name is "nullptr".
var NoFileChecksums FileChecksumGenFactory = noFileChecksums{}

type noFileChecksums struct{}

func (noFileChecksums) CreateFileChecksumGenerator(FileChecksumGenContext) FileChecksumGenerator {
	return nil
}
func (noFileChecksums) Name() string { return "nullptr" }

// legacyBlobChecksum reports whether method is one a blob file addition
// recorded before file checksums existed: the blob format's own checksum
// of the bytes before the footer ("crc32c", 4 bytes big-endian, or
// "xxhash64", 8), which the footer also holds. Generators may not take
// these names (Validate).
func legacyBlobChecksum(method string) bool { return method == "crc32c" || method == "xxhash64" }

// fileChecksumFactory returns the factory o asks for (nil: CRC-32C).
func fileChecksumFactory(o *Options) FileChecksumGenFactory {
	if o.FileChecksumGenFactory == nil {
		return crc32cFactory{}
	}
	return o.FileChecksumGenFactory
}

// validateFileChecksumFactory refuses a factory whose generators take a
// name reserved for the blob files' older checksums.
func validateFileChecksumFactory(f FileChecksumGenFactory) error {
	if f == nil {
		return nil
	}
	if g := f.CreateFileChecksumGenerator(FileChecksumGenContext{}); g != nil {
		if name := g.Name(); name == "" || legacyBlobChecksum(name) || name == UnknownFileChecksumFuncName {
			return base.InvalidArgumentf("shale: Options.FileChecksumGenFactory %q makes generators named %q, a name that is empty or reserved (crc32c, xxhash64, Unknown)", f.Name(), name)
		}
	}
	return nil
}

// checksummedFile is a file being written whose bytes also go to a
// FileChecksumGenerator, in order, as they are written: the whole-file
// checksum costs no second read. Only bytes a Write accepted are hashed.
// A file with a nil generator passes through.
type checksummedFile struct {
	vfs.File
	gen FileChecksumGenerator
}

func (f *checksummedFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	if n > 0 {
		f.gen.Update(p[:n])
	}
	return n, err
}

// WriteZeros passes zeros written ahead of the data on to the wrapped file,
// unhashed: the data written over them later is what the checksum covers.
func (f *checksummedFile) WriteZeros(off, n int64) error { return vfs.WriteZeros(f.File, off, n) }

// Alignment reports the wrapped file's, as a wrapping file must (vfs.Aligner).
func (f *checksummedFile) Alignment() int { return vfs.Alignment(f.File) }

// newChecksummedFile wraps f, the new file at name, with a generator from
// the DB's factory; it returns f unwrapped (and a nil generator) when the
// factory makes none.
func (d *DB) newChecksummedFile(f vfs.File, name string) (vfs.File, FileChecksumGenerator) {
	g := fileChecksumFactory(d.opts).CreateFileChecksumGenerator(FileChecksumGenContext{FileName: name})
	if g == nil {
		return f, nil
	}
	return &checksummedFile{File: f, gen: g}, g
}

// finishFileChecksum returns what the MANIFEST records of a file whose
// bytes g saw (nil g: no checksum, and an empty name).
func finishFileChecksum(g FileChecksumGenerator) (sum []byte, funcName string) {
	if g == nil {
		return nil, ""
	}
	g.Finalize()
	return bytes.Clone(g.GetChecksum()), g.Name()
}

// fileChecksumReadChunk is the size of the reads of computeFileChecksum.
const fileChecksumReadChunk = 1 << 20

// computeFileChecksum reads the file at path through fs, whole and in
// order, and returns its checksum by a generator of factory (nil: the
// built-in CRC-32C) asked for funcName (empty: the factory's own choice),
// with the generator's name. It is the one computation of a finished
// file's checksum: VerifyFileChecksums and Check compare what it returns
// with the MANIFEST, and ingestion (of an external table, before it is
// recorded) and backups (of a copy, against the source's recorded value)
// are meant to call it. A factory that makes no generator, or one of
// another name than funcName, is an error matching ErrInvalidArgument:
// the file cannot be checked with it. IO errors are returned as they are.
func computeFileChecksum(fs vfs.FS, path string, factory FileChecksumGenFactory, funcName string) (sum []byte, name string, err error) {
	g := fileChecksumGenerator(factory, path, funcName)
	if g == nil {
		if funcName == "" {
			return nil, "", base.InvalidArgumentf("shale: the file checksum factory makes no generator for %s", path)
		}
		return nil, "", base.InvalidArgumentf("shale: %s: its checksum was made by %q, which the file checksum factory does not make", path, funcName)
	}
	f, err := fs.Open(path, vfs.SequentialAccess)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	buf := make([]byte, fileChecksumReadChunk)
	for off := int64(0); ; {
		n, err := f.ReadAt(buf, off)
		if n > 0 {
			g.Update(buf[:n])
			off += int64(n)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, "", fmt.Errorf("shale: reading %s at offset %d: %w", path, off, err)
		}
	}
	sum, name = finishFileChecksum(g)
	return sum, name, nil
}

// fileChecksumGenerator returns a generator for the file at path of the
// name funcName (any when empty) from factory (nil: the built-in), or
// nil. The built-in CRC-32C is always at hand, whatever the factory, so a
// database written under the default can be checked with any options.
func fileChecksumGenerator(factory FileChecksumGenFactory, path, funcName string) FileChecksumGenerator {
	if funcName == FileChecksumCrc32cName || (factory == nil && funcName == "") {
		return &crc32cGenerator{}
	}
	if factory == nil {
		return nil
	}
	g := factory.CreateFileChecksumGenerator(FileChecksumGenContext{FileName: path, RequestedChecksumFuncName: funcName})
	if g == nil || (funcName != "" && g.Name() != funcName) {
		return nil
	}
	return g
}

// errFileChecksumMismatch builds the error of a file whose checksum is not
// the recorded one: corruption, naming the file.
func errFileChecksumMismatch(path, funcName string, recorded, computed []byte) error {
	return base.CorruptionErrorf(path, 0, "file checksum mismatch: the MANIFEST records %s %s, the file's bytes give %s",
		funcName, hex.EncodeToString(recorded), hex.EncodeToString(computed))
}

// errFileChecksumUnverifiable tells that a file's recorded checksum was
// made by a function that the factory at hand cannot make.
var errFileChecksumUnverifiable = errors.New("shale: file checksum function not available")

// verifyRecordedChecksum checks the file at path against its recorded
// checksum (funcName, sum) with factory. A file without one (funcName
// empty) is not checked: checked is false and err nil. A function the
// factory does not make gives an error matching both ErrInvalidArgument
// and errFileChecksumUnverifiable; a mismatch one matching ErrCorruption.
func verifyRecordedChecksum(fs vfs.FS, path string, factory FileChecksumGenFactory, funcName string, sum []byte) (checked bool, err error) {
	if funcName == "" {
		return false, nil
	}
	got, _, err := computeFileChecksum(fs, path, factory, funcName)
	if errors.Is(err, ErrInvalidArgument) {
		return false, fmt.Errorf("%w (%w)", err, errFileChecksumUnverifiable)
	}
	if err != nil {
		return false, err
	}
	if !bytes.Equal(got, sum) {
		return true, errFileChecksumMismatch(path, funcName, sum, got)
	}
	return true, nil
}

// VerifyFileChecksums reads every live table and blob file whole and
// compares its checksum with the one the MANIFEST records (RocksDB's
// VerifyFileChecksums). Files recorded without one (written with
// NoFileChecksums, or before shale recorded them) are skipped; a blob
// file recorded with the blob format's own checksum (before) is checked
// against its footer. A mismatch matches ErrCorruption and names the file;
// every damaged file is reported. A checksum made by a function
// Options.FileChecksumGenFactory does not make (nor the built-in CRC-32C)
// is an error matching ErrInvalidArgument naming the file.
func (d *DB) VerifyFileChecksums() error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	rs := d.loadReadState()
	if rs == nil {
		return ErrClosed
	}
	defer rs.unref()
	factory := d.opts.FileChecksumGenFactory
	var errs []error
	for _, files := range rs.version.Levels {
		for _, f := range files {
			if _, err := verifyRecordedChecksum(d.fs, d.tablePath(f.FileNum), factory, f.FileChecksumFuncName, f.FileChecksum); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, b := range rs.version.BlobFiles {
		if err := d.verifyBlobFileChecksum(b, factory); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// verifyBlobFileChecksum checks one live blob file against its recorded
// checksum.
func (d *DB) verifyBlobFileChecksum(b *manifest.BlobFileMetadata, factory FileChecksumGenFactory) error {
	if legacyBlobChecksum(b.ChecksumMethod) {
		f, err := d.fileCache.findBlob(b.FileNum)
		if err != nil {
			return err
		}
		defer f.release()
		return verifyLegacyBlobChecksum(d.blobPath(b.FileNum), b, f.blobReader.Properties().FileChecksum, f.blobReader.VerifyFileChecksum)
	}
	_, err := verifyRecordedChecksum(d.fs, d.blobPath(b.FileNum), factory, b.ChecksumMethod, b.ChecksumValue)
	return err
}

// verifyLegacyBlobChecksum checks a blob file whose MANIFEST record holds
// the blob format's checksum: the recorded value must be the footer's, and
// the bytes before the footer must give it (verify).
func verifyLegacyBlobChecksum(path string, b *manifest.BlobFileMetadata, footer uint64, verify func() error) error {
	var want []byte
	if b.ChecksumMethod == "xxhash64" {
		want = binary.BigEndian.AppendUint64(nil, footer)
	} else {
		want = binary.BigEndian.AppendUint32(nil, uint32(footer))
	}
	if !bytes.Equal(want, b.ChecksumValue) {
		return base.CorruptionErrorf(path, 0, "file checksum mismatch: the MANIFEST records %s %s, the footer holds %s",
			b.ChecksumMethod, hex.EncodeToString(b.ChecksumValue), hex.EncodeToString(want))
	}
	return verify()
}

// liveFileChecksum renders a recorded checksum for LiveFileMetaData:
// RocksDB's "Unknown" and an empty value when there is none.
func liveFileChecksum(sum []byte, funcName string) ([]byte, string) {
	if funcName == "" {
		return nil, UnknownFileChecksumFuncName
	}
	return bytes.Clone(sum), funcName
}
