package shale

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/shaledb/shale/blob"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
)

// External tables (RocksDB's SstFileWriter) are tables written outside a
// database, in the database's table format, for IngestExternalFile.
//
// Every entry is written at seqnum 0. The table records two user
// properties: propExternalVersion ("1"), which marks it as external (RocksDB
// records rocksdb.external_sst_file.version), and, when values went to blob
// files, propExternalBlobFiles, the base names of those files (in the
// table's directory) in the order of their local numbers: the table's blob
// indexes name blob file 1, 2, ... and ingestion gives the files database
// numbers and renumbers the indexes. RocksDB also stores the global seqnum
// in the file and rewrites it at ingestion; shale records it in the
// MANIFEST (manifest.FileMetadata.GlobalSeqNum) and the table reader
// applies it, so an ingested table is never modified.

// The properties of an external table.
const (
	propExternalVersion   = "shale.external_sst_file.version"
	propExternalBlobFiles = "shale.external_sst_file.blob_files"
	externalVersion       = "1"
)

// ExternalSSTFileInfo describes a table SSTFileWriter finished (RocksDB's
// ExternalSstFileInfo).
type ExternalSSTFileInfo struct {
	// FilePath is the table's path.
	FilePath string
	// SmallestKey and LargestKey are the smallest and largest user keys of
	// the point entries (nil when there are none).
	SmallestKey, LargestKey []byte
	// SmallestRangeDelKey and LargestRangeDelKey bound the range deletions
	// (the start of the first, the end of the last; nil when none).
	SmallestRangeDelKey, LargestRangeDelKey []byte
	// NumEntries counts the point entries, NumRangeDelEntries the range
	// deletions as given (before fragmentation).
	NumEntries, NumRangeDelEntries uint64
	// FileSize is the table's size in bytes.
	FileSize uint64
	// BlobFiles are the paths of the blob files written beside the table
	// (Options.EnableBlobFiles), which ingestion takes with it.
	BlobFiles []string
}

// SSTFileWriter writes an external table for DB.IngestExternalFile, in the
// table format the Options ask for (compression, block size, filters,
// prefix extractor, comparer), through Options.FS. Point keys are added in
// strictly increasing order; range deletions in any order. It is not safe
// for concurrent use.
type SSTFileWriter struct {
	options *Options
	fs      vfs.FS
	cmp     *base.Comparer
	path    string
	w       *sstable.Writer
	// lastKey is the last point key added, while hasKey.
	lastKey []byte
	hasKey  bool
	dels    []rangedel.Tombstone
	info    ExternalSSTFileInfo
	// blob side (Options.EnableBlobFiles): the open blob file bw (local
	// number len(blobPaths)), its size so far, every blob file started.
	bw        *blob.Writer
	blobPaths []string
	idxBuf    []byte
	err       error
	done      bool
}

// NewSSTFileWriter returns a writer of external tables with opts (nil: the
// defaults). Open starts a table.
func NewSSTFileWriter(opts *Options) *SSTFileWriter {
	o := &Options{}
	if opts != nil {
		*o = *opts
	}
	o.EnsureDefaults()
	return &SSTFileWriter{options: o, fs: o.FS, cmp: o.Comparer}
}

// Open creates the table at path (it must not exist), and starts writing.
// A writer writes one table.
func (w *SSTFileWriter) Open(path string) error {
	if w.w != nil || w.done {
		return base.InvalidArgumentf("shale: SSTFileWriter.Open(%q): the writer already wrote %s", path, w.path)
	}
	if err := w.options.Validate(); err != nil {
		return err
	}
	if _, err := w.fs.Stat(path); err == nil {
		return base.InvalidArgumentf("shale: SSTFileWriter.Open: %s already exists", path)
	}
	f, err := w.fs.Create(path)
	if err != nil {
		return fmt.Errorf("shale: SSTFileWriter.Open: %w", err)
	}
	wo := tableWriterOptions(w.options, w.cmp, 0)
	wo.Collectors = append(wo.Collectors, &externalPropsCollector{w: w})
	w.path = path
	w.w = sstable.NewWriter(f, path, wo)
	w.info.FilePath = path
	return nil
}

// Put adds key with value. Keys must be strictly increasing (by the
// comparer) across Put, Merge and Delete.
func (w *SSTFileWriter) Put(key, value []byte) error {
	return w.add(base.KindSet, key, value)
}

// Merge adds a merge operand for key (the database that ingests the table
// needs a merge operator).
func (w *SSTFileWriter) Merge(key, operand []byte) error {
	return w.add(base.KindMerge, key, operand)
}

// Delete adds a tombstone for key.
func (w *SSTFileWriter) Delete(key []byte) error {
	return w.add(base.KindDelete, key, nil)
}

// DeleteRange adds a deletion of the keys in [start, end), in any order
// relative to other calls; it deletes what the table is ingested over, not
// the table's own point keys (they are at the same seqnum, and a point
// entry is newer than a range deletion of its seqnum). An empty range
// (start == end) is ignored, as DB.DeleteRange ignores it.
func (w *SSTFileWriter) DeleteRange(start, end []byte) error {
	if err := w.check("DeleteRange"); err != nil {
		return err
	}
	switch c := w.cmp.Compare(start, end); {
	case c == 0:
		return nil
	case c > 0:
		return base.InvalidArgumentf("shale: SSTFileWriter.DeleteRange: start %q must be before end %q", start, end)
	}
	w.dels = append(w.dels, rangedel.Tombstone{Start: bytes.Clone(start), End: bytes.Clone(end)})
	if w.info.SmallestRangeDelKey == nil || w.cmp.Compare(start, w.info.SmallestRangeDelKey) < 0 {
		w.info.SmallestRangeDelKey = bytes.Clone(start)
	}
	if w.info.LargestRangeDelKey == nil || w.cmp.Compare(end, w.info.LargestRangeDelKey) > 0 {
		w.info.LargestRangeDelKey = bytes.Clone(end)
	}
	w.info.NumRangeDelEntries++
	return nil
}

// FileSize returns the bytes of the table written so far (finished
// blocks), RocksDB's SstFileWriter::FileSize; blob files are not counted.
func (w *SSTFileWriter) FileSize() uint64 {
	if w.w == nil {
		return w.info.FileSize
	}
	return w.w.FileSize()
}

// check refuses a call made before Open, after Finish or Abandon, or after
// a failure.
func (w *SSTFileWriter) check(op string) error {
	if w.err != nil {
		return w.err
	}
	if w.w == nil {
		if w.done {
			return base.InvalidArgumentf("shale: SSTFileWriter.%s after Finish or Abandon", op)
		}
		return base.InvalidArgumentf("shale: SSTFileWriter.%s before Open", op)
	}
	return nil
}

func (w *SSTFileWriter) add(kind base.Kind, key, value []byte) error {
	if w.err != nil || w.w == nil {
		return w.check(map[base.Kind]string{base.KindSet: "Put", base.KindMerge: "Merge", base.KindDelete: "Delete"}[kind])
	}
	if w.hasKey && w.cmp.Compare(key, w.lastKey) <= 0 {
		what := "out of order"
		if w.cmp.Compare(key, w.lastKey) == 0 {
			what = "a duplicate"
		}
		return base.InvalidArgumentf("shale: SSTFileWriter: key %q is %s: it must sort after the previous key %q", key, what, w.lastKey)
	}
	var err error
	if kind == base.KindSet && w.options.EnableBlobFiles && len(value) > 0 && int64(len(value)) >= w.options.MinBlobSize {
		err = w.addBlob(key, value)
	} else {
		err = w.w.Add(base.MakeInternalKey(key, 0, kind), value)
	}
	if err != nil {
		w.err = err
		return err
	}
	w.lastKey = append(w.lastKey[:0], key...)
	if !w.hasKey {
		w.info.SmallestKey = bytes.Clone(key)
		w.hasKey = true
	}
	w.info.NumEntries++
	return nil
}

// addBlob writes value to the current blob file (starting one when none is
// open) and a blob index to the table.
func (w *SSTFileWriter) addBlob(key, value []byte) error {
	if w.bw == nil {
		path := fmt.Sprintf("%s.%06d.blob", w.path, len(w.blobPaths)+1)
		if _, err := w.fs.Stat(path); err == nil {
			return base.InvalidArgumentf("shale: SSTFileWriter: blob file %s already exists", path)
		}
		f, err := w.fs.Create(path)
		if err != nil {
			return err
		}
		w.blobPaths = append(w.blobPaths, path)
		w.bw = blob.NewWriter(f, blob.WriterOptions{
			FileNum: base.FileNum(len(w.blobPaths)), FileName: path,
			Compression:    w.options.BlobCompression,
			TargetFileSize: min(w.options.BlobFileSize, blobWritePrealloc),
			BytesPerSync:   w.options.BytesPerSync,
		})
	}
	x, err := w.bw.Add(key, value)
	if err != nil {
		return err
	}
	w.idxBuf = blob.EncodeIndex(w.idxBuf[:0], x)
	if err := w.w.Add(base.MakeInternalKey(key, 0, base.KindBlobIndex), w.idxBuf); err != nil {
		return err
	}
	if int64(w.bw.Size()) >= w.options.BlobFileSize {
		return w.finishBlob()
	}
	return nil
}

// finishBlob finishes the open blob file (footer, sync, close).
func (w *SSTFileWriter) finishBlob() error {
	if w.bw == nil {
		return nil
	}
	bw := w.bw
	w.bw = nil
	_, err := bw.Close()
	return err
}

// Finish writes the range deletions, the blob files' footers and the
// table's meta blocks and footer, and syncs and closes the files. A table
// needs at least one entry or range deletion (RocksDB's rule). After a
// failure the files written are removed.
func (w *SSTFileWriter) Finish() error {
	if err := w.check("Finish"); err != nil {
		return err
	}
	if w.info.NumEntries == 0 && len(w.dels) == 0 {
		w.Abandon()
		return base.InvalidArgumentf("shale: SSTFileWriter.Finish: cannot write %s without entries", w.path)
	}
	err := w.finishBlob()
	if err == nil {
		// Every tombstone is at seqnum 0: fragments that several cover
		// are written once.
		for _, s := range rangedel.Fragment(w.cmp.Compare, w.dels) {
			if err = w.w.AddRangeTombstone(s.Start, s.End, 0); err != nil {
				break
			}
		}
	}
	if err != nil {
		w.err = err
		w.Abandon()
		return err
	}
	tw := w.w
	w.w = nil
	w.done = true
	meta, err := tw.Close()
	if err != nil {
		w.err = err
		w.removeFiles()
		return err
	}
	w.info.FileSize = meta.Size
	if w.hasKey {
		w.info.LargestKey = bytes.Clone(w.lastKey)
	}
	w.info.BlobFiles = append([]string(nil), w.blobPaths...)
	return nil
}

// Info describes the table once Finish succeeded (RocksDB returns it from
// Finish).
func (w *SSTFileWriter) Info() ExternalSSTFileInfo { return w.info }

// Abandon stops writing and removes the table and its blob files; it does
// nothing after Finish.
func (w *SSTFileWriter) Abandon() {
	if w.w == nil {
		return
	}
	w.w.Abort()
	w.w = nil
	w.done = true
	if w.bw != nil {
		w.bw.Abort()
		w.bw = nil
	}
	w.removeFiles()
}

func (w *SSTFileWriter) removeFiles() {
	_ = w.fs.Remove(w.path)
	for _, p := range w.blobPaths {
		_ = w.fs.Remove(p)
	}
}

// externalPropsCollector writes the properties that mark a table external.
type externalPropsCollector struct{ w *SSTFileWriter }

func (c *externalPropsCollector) Name() string                 { return "shale.ExternalSSTFile" }
func (c *externalPropsCollector) Add(base.InternalKey, []byte) {}
func (c *externalPropsCollector) Finish(props map[string]string) {
	props[propExternalVersion] = externalVersion
	if len(c.w.blobPaths) > 0 {
		names := make([]string, len(c.w.blobPaths))
		for i, p := range c.w.blobPaths {
			names[i] = c.w.fs.PathBase(p)
		}
		props[propExternalBlobFiles] = strings.Join(names, ",")
	}
}

// errNotExternal marks a table IngestExternalFile refuses as not written by
// SSTFileWriter.
var errNotExternal = errors.New("not an external table (no " + propExternalVersion + " property: write it with SSTFileWriter)")
