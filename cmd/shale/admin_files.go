package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/shaledb/shale/blob"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
	"github.com/spf13/cobra"
)

// The verbs in this file read a database's files directly, as ldb's
// manifest_dump, dump_wal and idump and sst_dump do, without opening the
// database: they take no lock, write nothing, and also work on a database
// that does not open. Every damage they meet is returned as an error
// naming the file and offset, so the tool exits 1.

// currentManifest returns the path of the MANIFEST that dir's CURRENT names.
func currentManifest(fs vfs.FS, dir string) (string, error) {
	cur := fs.PathJoin(dir, base.MakeFilename(base.FileTypeCurrent, 0))
	data, err := vfs.ReadFile(fs, cur)
	if err != nil {
		return "", fmt.Errorf("reading CURRENT of %s: %w", dir, err)
	}
	num, err := manifest.ParseCurrent(data, cur)
	if err != nil {
		return "", err
	}
	return fs.PathJoin(dir, base.MakeFilename(base.FileTypeManifest, num)), nil
}

// replayManifest replays the MANIFEST at path into the version it builds.
func replayManifest(fs vfs.FS, path string) (manifest.ReplayResult, error) {
	f, err := fs.Open(path)
	if err != nil {
		return manifest.ReplayResult{}, fmt.Errorf("opening MANIFEST: %w", err)
	}
	defer f.Close()
	return manifest.Replay(io.NewSectionReader(f, 0, math.MaxInt64), path, base.DefaultComparer, manifest.NumLevelsMax)
}

// liveVersion replays the MANIFEST that dir's CURRENT names.
func liveVersion(fs vfs.FS, dir string) (manifest.ReplayResult, error) {
	path, err := currentManifest(fs, dir)
	if err != nil {
		return manifest.ReplayResult{}, err
	}
	return replayManifest(fs, path)
}

// requireDB refuses a verb that reads a database's files without --db.
func requireDB(f *adminFlags) error {
	if f.db == "" {
		return errors.New("--db is required")
	}
	return nil
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// batchOp is one decoded entry of a WAL batch.
type batchOp struct {
	Kind  base.Kind
	Key   []byte
	Value []byte
}

// decodeBatch decodes a WAL record (a batch: seqnum uint64, count uint32,
// then entries of a kind byte, a length-prefixed key and, for the kinds
// that have one, a length-prefixed value). Malformed input is corruption
// naming file and offset.
func decodeBatch(rec []byte, file string, off int64) (seq base.SeqNum, ops []batchOp, err error) {
	if len(rec) < 12 {
		return 0, nil, base.CorruptionErrorf(file, off, "WAL record of %d bytes is shorter than a batch header", len(rec))
	}
	seq = base.SeqNum(binary.LittleEndian.Uint64(rec))
	count := binary.LittleEndian.Uint32(rec[8:])
	data := rec[12:]
	readBytes := func() ([]byte, bool) {
		n, w := binary.Uvarint(data)
		if w <= 0 || n > uint64(len(data)-w) {
			return nil, false
		}
		p := data[w : w+int(n)]
		data = data[w+int(n):]
		return p, true
	}
	for len(data) > 0 {
		op := batchOp{Kind: base.Kind(data[0])}
		data = data[1:]
		var ok bool
		if op.Key, ok = readBytes(); !ok {
			return seq, ops, base.CorruptionErrorf(file, off, "batch at seqnum %d: entry %d is truncated", seq, len(ops))
		}
		switch op.Kind {
		case base.KindSet, base.KindMerge, base.KindRangeDelete, base.KindBlobIndex:
			if op.Value, ok = readBytes(); !ok {
				return seq, ops, base.CorruptionErrorf(file, off, "batch at seqnum %d: entry %d is truncated", seq, len(ops))
			}
		case base.KindDelete, base.KindSingleDelete, base.KindLogData:
		default:
			return seq, ops, base.CorruptionErrorf(file, off, "batch at seqnum %d: entry %d has unknown kind %d", seq, len(ops), op.Kind)
		}
		ops = append(ops, op)
	}
	if uint32(len(ops)) != count {
		return seq, ops, base.CorruptionErrorf(file, off, "batch at seqnum %d claims %d entries but holds %d", seq, count, len(ops))
	}
	return seq, ops, nil
}

// formatEntry prints one internal entry as ldb's idump does: KEY @ SEQ :
// KIND => VALUE, a blob index decoded to its file, offset and size, a
// range deletion's end key as its value.
func formatEntry(f *adminFlags, file string, key []byte, seq base.SeqNum, kind base.Kind, value []byte) (string, error) {
	s := fmt.Sprintf("%s @ %d : %s", f.encodeKey(key), seq, kind)
	switch kind {
	case base.KindSet, base.KindMerge, base.KindLogData:
		s += " => " + f.encodeValue(value)
	case base.KindRangeDelete:
		s += " => " + f.encodeKey(value)
	case base.KindBlobIndex:
		x, err := blob.DecodeIndex(file, value)
		if err != nil {
			return s, err
		}
		s += fmt.Sprintf(" => blob file %s offset %d size %d %s", x.FileNum, x.Offset, x.Size, x.Compression)
	}
	return s, nil
}

// openTable opens the table at path for reading.
func openTable(fs vfs.FS, path string) (*sstable.Reader, error) {
	file, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening table: %w", err)
	}
	return sstable.NewReader(file, sstable.ReaderOptions{FileName: path, MaxAutoReadaheadSize: -1})
}

// openBlob opens the blob file at path for reading.
func openBlob(fs vfs.FS, path string, num base.FileNum) (*blob.Reader, error) {
	file, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening blob file: %w", err)
	}
	return blob.NewReader(file, blob.ReaderOptions{FileName: path, FileNum: num})
}

// tableEntries calls fn with every point entry of the table in [lo, hi)
// and then its range tombstones that overlap it (each fragment once per
// seqnum); fn returns false to stop.
func tableEntries(r *sstable.Reader, kr *keyRange, fn func(key []byte, seq base.SeqNum, kind base.Kind, value []byte) bool) (err error) {
	it := r.NewIter(sstable.IterOptions{Lower: kr.lo, Upper: kr.hi})
	defer func() {
		if cerr := it.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if !fn(k.UserKey, k.SeqNum(), k.Kind(), it.Value()) {
			return it.Error()
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	for _, sp := range r.RangeTombstones() {
		if (kr.hi != nil && string(sp.Start) >= string(kr.hi)) || (kr.lo != nil && string(sp.End) <= string(kr.lo)) {
			continue
		}
		for _, seq := range sp.Seqs {
			if !fn(sp.Start, seq, base.KindRangeDelete, sp.End) {
				return nil
			}
		}
	}
	return nil
}

// levelName is "L3".
func levelName(level int) string { return fmt.Sprintf("L%d", level) }

// trimmedLevels is the number of levels up to the last non-empty one.
func trimmedLevels(v *manifest.Version) int {
	n := 0
	for l := range v.Levels {
		if len(v.Levels[l]) > 0 {
			n = l + 1
		}
	}
	return n
}

func newIdumpCmd() *cobra.Command {
	var (
		f  adminFlags
		kr keyRange
	)
	cmd := &cobra.Command{
		Use:   "idump --db DIR [--from K] [--to K] [--max_keys N]",
		Short: "Print the internal entries of every live table: key, seqnum, kind and value (reads the files, takes no lock)",
		Long: `idump reads the live tables that the MANIFEST names, level by level (L0
newest first), and prints each internal entry as KEY @ SEQNUM : KIND =>
VALUE: Set, Delete, SingleDelete, Merge, a range deletion (its end key as
the value) and a blob index (decoded to blob file, offset and size). The
writes not yet flushed are in the WALs: see dump_wal.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireDB(&f); err != nil {
				return err
			}
			if err := kr.decode(cmd, &f); err != nil {
				return err
			}
			fs := f.fs()
			res, err := liveVersion(fs, f.db)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			n := 0
			for level, files := range res.Version.Levels {
				for _, m := range files {
					if kr.lo != nil && string(m.Largest.UserKey) < string(kr.lo) || kr.hi != nil && string(m.Smallest.UserKey) >= string(kr.hi) {
						continue
					}
					path := fs.PathJoin(f.db, base.MakeFilename(base.FileTypeTable, m.FileNum))
					fmt.Fprintf(out, "# %s %s\n", levelName(level), base.MakeFilename(base.FileTypeTable, m.FileNum))
					r, err := openTable(fs, path)
					if err != nil {
						return err
					}
					var ferr error
					err = tableEntries(r, &kr, func(key []byte, seq base.SeqNum, kind base.Kind, value []byte) bool {
						if kr.maxKeys > 0 && n >= kr.maxKeys {
							return false
						}
						var s string
						if s, ferr = formatEntry(&f, path, key, seq, kind, value); ferr != nil {
							return false
						}
						fmt.Fprintln(out, s)
						n++
						return true
					})
					err = errors.Join(err, ferr, r.Close())
					if err != nil {
						return err
					}
					if kr.maxKeys > 0 && n >= kr.maxKeys {
						return nil
					}
				}
			}
			return nil
		},
	}
	f.register(cmd, readOnly)
	kr.register(cmd, true, false)
	return cmd
}

// liveFile is one table in list_live_files --json.
type liveFile struct {
	Name          string   `json:"name"`
	Level         int      `json:"level"`
	Size          uint64   `json:"size"`
	SmallestKey   string   `json:"smallest_key"`
	LargestKey    string   `json:"largest_key"`
	SmallestSeqno uint64   `json:"smallest_seqno"`
	LargestSeqno  uint64   `json:"largest_seqno"`
	NumEntries    uint64   `json:"num_entries"`
	NumDeletions  uint64   `json:"num_deletions"`
	BlobFiles     []string `json:"blob_files,omitempty"`
}

// liveBlobFile is one blob file in list_live_files --json.
type liveBlobFile struct {
	Name         string `json:"name"`
	Size         uint64 `json:"size"`
	Blobs        uint64 `json:"blobs"`
	BlobBytes    uint64 `json:"blob_bytes"`
	GarbageBlobs uint64 `json:"garbage_blobs"`
	GarbageBytes uint64 `json:"garbage_bytes"`
}

// tableJSON describes the table m of level for --json.
func tableJSON(f *adminFlags, level int, m *manifest.FileMetadata) liveFile {
	t := liveFile{Name: base.MakeFilename(base.FileTypeTable, m.FileNum), Level: level, Size: m.Size,
		SmallestKey: f.encodeKey(m.Smallest.UserKey), LargestKey: f.encodeKey(m.Largest.UserKey),
		SmallestSeqno: uint64(m.SmallestSeq), LargestSeqno: uint64(m.LargestSeq),
		NumEntries: m.NumEntries, NumDeletions: m.NumDeletions}
	for _, b := range m.BlobFiles {
		t.BlobFiles = append(t.BlobFiles, base.MakeFilename(base.FileTypeBlob, b))
	}
	return t
}

// versionFiles describes the live files of v, read from the MANIFEST
// named manifestName.
func versionFiles(f *adminFlags, manifestName string, v *manifest.Version) liveFiles {
	lf := liveFiles{Manifest: manifestName, Tables: []liveFile{}, BlobFiles: []liveBlobFile{}}
	for level, files := range v.Levels {
		for _, m := range files {
			lf.Tables = append(lf.Tables, tableJSON(f, level, m))
		}
	}
	for _, b := range v.BlobFiles {
		lf.BlobFiles = append(lf.BlobFiles, liveBlobFile{Name: base.MakeFilename(base.FileTypeBlob, b.FileNum), Size: b.Size,
			Blobs: b.TotalCount, BlobBytes: b.TotalBytes, GarbageBlobs: b.GarbageCount, GarbageBytes: b.GarbageBytes})
	}
	return lf
}

// liveFiles is list_live_files --json.
type liveFiles struct {
	Manifest  string         `json:"manifest"`
	Tables    []liveFile     `json:"tables"`
	BlobFiles []liveBlobFile `json:"blob_files"`
}

func newListLiveFilesCmd() *cobra.Command {
	var (
		f      adminFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list_live_files --db DIR [--json]",
		Short: "List the live tables per level and the live blob files, with sizes and key ranges (reads the MANIFEST, takes no lock)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireDB(&f); err != nil {
				return err
			}
			fs := f.fs()
			path, err := currentManifest(fs, f.db)
			if err != nil {
				return err
			}
			res, err := replayManifest(fs, path)
			if err != nil {
				return err
			}
			lf := versionFiles(&f, fs.PathBase(path), res.Version)
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, lf)
			}
			fmt.Fprintf(out, "manifest: %s\n", lf.Manifest)
			level := -1
			for _, t := range lf.Tables {
				if t.Level != level {
					level = t.Level
					fmt.Fprintf(out, "%s:\n", levelName(level))
				}
				fmt.Fprintf(out, "  %s size=%d keys=[%s .. %s] seqnums=%d-%d entries=%d deletions=%d", t.Name, t.Size,
					t.SmallestKey, t.LargestKey, t.SmallestSeqno, t.LargestSeqno, t.NumEntries, t.NumDeletions)
				if len(t.BlobFiles) > 0 {
					fmt.Fprintf(out, " blobs=%s", strings.Join(t.BlobFiles, ","))
				}
				fmt.Fprintln(out)
			}
			if len(lf.BlobFiles) > 0 {
				fmt.Fprintln(out, "blob files:")
				for _, b := range lf.BlobFiles {
					fmt.Fprintf(out, "  %s size=%d blobs=%d bytes=%d garbage=%d/%d\n", b.Name, b.Size, b.Blobs, b.BlobBytes, b.GarbageBlobs, b.GarbageBytes)
				}
			}
			return nil
		},
	}
	f.register(cmd, readOnly)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
