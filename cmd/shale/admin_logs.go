package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/record"
	"github.com/shaledb/shale/internal/wal"
	"github.com/spf13/cobra"
)

// manifestEdit is one record of manifest_dump --json.
type manifestEdit struct {
	Offset           int64              `json:"offset"`
	ManifestFormat   uint64             `json:"manifest_format,omitempty"`
	Comparer         string             `json:"comparer,omitempty"`
	MergeOperator    string             `json:"merge_operator,omitempty"`
	LogNumber        *uint64            `json:"log_number,omitempty"`
	NextFileNumber   *uint64            `json:"next_file_number,omitempty"`
	LastSeqno        *uint64            `json:"last_seqno,omitempty"`
	DeletedFiles     []manifestDeletion `json:"deleted_files,omitempty"`
	NewFiles         []liveFile         `json:"new_files,omitempty"`
	NewBlobFiles     []liveBlobFile     `json:"new_blob_files,omitempty"`
	BlobGarbage      []liveBlobFile     `json:"blob_garbage,omitempty"`
	DeletedBlobFiles []string           `json:"deleted_blob_files,omitempty"`
	SecondaryAdded   []string           `json:"secondary_tombstones_added,omitempty"`
	SecondaryRetired []uint64           `json:"secondary_tombstones_retired,omitempty"`
	Text             string             `json:"text"` // VersionEdit.String
}

// manifestDeletion is a deleted file of manifestEdit.
type manifestDeletion struct {
	Level int    `json:"level"`
	Name  string `json:"name"`
}

// manifestDump is manifest_dump --json.
type manifestDump struct {
	File           string         `json:"file"`
	Edits          []manifestEdit `json:"edits"`
	NextFileNumber uint64         `json:"next_file_number"`
	LogNumber      uint64         `json:"log_number"`
	LastSeqno      uint64         `json:"last_seqno"`
	TornTailOffset int64          `json:"torn_tail_offset,omitempty"`
	TornTailBytes  int64          `json:"torn_tail_bytes,omitempty"`
	Version        liveFiles      `json:"version"`
}

func u64p(v uint64) *uint64 { return &v }

func editJSON(f *adminFlags, off int64, e *manifest.VersionEdit) manifestEdit {
	j := manifestEdit{Offset: off, ManifestFormat: e.ManifestFormat, Comparer: e.ComparerName,
		MergeOperator: e.MergeOperatorName, Text: e.String()}
	if e.HasLogNumber {
		j.LogNumber = u64p(uint64(e.LogNumber))
	}
	if e.HasNextFileNumber {
		j.NextFileNumber = u64p(uint64(e.NextFileNumber))
	}
	if e.HasLastSeq {
		j.LastSeqno = u64p(uint64(e.LastSeq))
	}
	for d := range e.DeletedFiles {
		j.DeletedFiles = append(j.DeletedFiles, manifestDeletion{Level: d.Level, Name: base.MakeFilename(base.FileTypeTable, d.FileNum)})
	}
	slices.SortFunc(j.DeletedFiles, func(a, b manifestDeletion) int {
		return cmp.Or(cmp.Compare(a.Level, b.Level), cmp.Compare(a.Name, b.Name))
	})
	for _, nf := range e.NewFiles {
		j.NewFiles = append(j.NewFiles, tableJSON(f, nf.Level, nf.Meta))
	}
	for _, b := range e.NewBlobFiles {
		j.NewBlobFiles = append(j.NewBlobFiles, liveBlobFile{Name: base.MakeFilename(base.FileTypeBlob, b.FileNum), Size: b.Size,
			Blobs: b.TotalCount, BlobBytes: b.TotalBytes})
	}
	for _, g := range e.BlobGarbage {
		j.BlobGarbage = append(j.BlobGarbage, liveBlobFile{Name: base.MakeFilename(base.FileTypeBlob, g.FileNum),
			GarbageBlobs: g.Count, GarbageBytes: g.Bytes})
	}
	for _, n := range e.DeletedBlobFiles {
		j.DeletedBlobFiles = append(j.DeletedBlobFiles, base.MakeFilename(base.FileTypeBlob, n))
	}
	for _, t := range e.AddedSecondaryTombstones {
		j.SecondaryAdded = append(j.SecondaryAdded, t.String())
	}
	for _, s := range e.RetiredSecondaryTombstones {
		j.SecondaryRetired = append(j.SecondaryRetired, uint64(s))
	}
	return j
}

func newManifestDumpCmd() *cobra.Command {
	var (
		f      adminFlags
		path   string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "manifest_dump (--db DIR | --path MANIFEST) [--json]",
		Short: "Print every version edit of a MANIFEST, decoded, and the version they build (reads the file, takes no lock)",
		Long: `manifest_dump prints each record of the MANIFEST (the one CURRENT names,
or --path) at its offset, decoded: comparer, log and next file numbers,
last seqnum, deleted and new tables (level, key range, seqnums, counts,
blob references), blob files added, their garbage and deletions, and
secondary tombstones. Then the counters and the LSM shape that replaying
them builds. A damaged record is reported with its file and offset, after
the records before it, and the tool exits 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fs := f.fs()
			if path == "" {
				if err := requireDB(&f); err != nil {
					return errors.New("--db or --path is required")
				}
				var err error
				if path, err = currentManifest(fs, f.db); err != nil {
					return err
				}
			}
			file, err := fs.Open(path)
			if err != nil {
				return fmt.Errorf("opening MANIFEST: %w", err)
			}
			defer file.Close()
			out := cmd.OutOrStdout()
			dump := manifestDump{File: path, Edits: []manifestEdit{}}
			rr := record.NewReader(io.NewSectionReader(file, 0, math.MaxInt64), path)
			var damage error
			for i := 0; ; i++ {
				rec, err := rr.Next()
				if err == io.EOF {
					damage = rr.TailDamage()
					break
				}
				if err != nil {
					damage = err
					break
				}
				var e manifest.VersionEdit
				if err := e.Decode(rec, path, rr.Offset()); err != nil {
					damage = err
					break
				}
				if asJSON {
					dump.Edits = append(dump.Edits, editJSON(&f, rr.Offset(), &e))
				} else {
					fmt.Fprintf(out, "record %d at offset %d:\n%s", i, rr.Offset(), e.String())
				}
			}
			if damage != nil {
				if asJSON {
					writeJSON(out, dump)
				}
				return damage
			}
			res, err := replayManifest(fs, path)
			if err != nil {
				if asJSON {
					writeJSON(out, dump)
				}
				return err
			}
			if asJSON {
				dump.NextFileNumber, dump.LogNumber, dump.LastSeqno = uint64(res.NextFileNum), uint64(res.LogNum), uint64(res.LastSeq)
				dump.TornTailOffset, dump.TornTailBytes = res.TornOffset, res.TornBytes
				dump.Version = versionFiles(&f, fs.PathBase(path), res.Version)
				return writeJSON(out, dump)
			}
			fmt.Fprintf(out, "next file number %d, log number %s, last seqnum %d\n", res.NextFileNum, res.LogNum, res.LastSeq)
			if res.TornBytes > 0 {
				fmt.Fprintf(out, "torn tail of %d bytes at offset %d dropped (what a crash leaves)\n", res.TornBytes, res.TornOffset)
			}
			fmt.Fprintf(out, "version:\n%s", res.Version)
			return nil
		},
	}
	f.register(cmd, readOnly)
	cmd.Flags().StringVar(&path, "path", "", "MANIFEST file to read instead of the one CURRENT names")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newDumpWALCmd() *cobra.Command {
	var (
		f       adminFlags
		walfile string
		header  bool
	)
	cmd := &cobra.Command{
		Use:   "dump_wal --walfile F [--header] [--hex]",
		Short: "Print every batch of a WAL file, decoded: seqnum, count and each operation (reads the file only)",
		Long: `dump_wal prints each record of the WAL as a batch: its offset, first
seqnum and count, then one line per operation with its seqnum (PUT, DELETE,
SINGLE_DELETE, MERGE, DELETE_RANGE, a blob index decoded, LOG_DATA). With
--header only the batch lines. A torn tail (what a crash leaves) is noted on
stderr; damage is reported with the file and offset and the tool exits 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if walfile == "" {
				return errors.New("--walfile is required")
			}
			out := cmd.OutOrStdout()
			res, err := wal.Replay(f.fs(), walfile, wal.TolerateCorruptedTailRecords, func(rec []byte, off int64) error {
				seq, ops, err := decodeBatch(rec, walfile, off)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "offset %d: seqnum %d count %d bytes %d\n", off, seq, len(ops), len(rec))
				if header {
					return nil
				}
				opSeq := seq
				for _, op := range ops {
					s, err := formatEntry(&f, walfile, op.Key, opSeq, op.Kind, op.Value)
					if err != nil {
						return err
					}
					fmt.Fprintf(out, "  %s\n", s)
					if op.Kind != base.KindLogData { // log data takes no seqnum
						opSeq++
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			if res.TornTailBytes > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "shale: note: %s ends in a torn tail of %d bytes at offset %d (what a crash leaves; Open drops it)\n",
					walfile, res.TornTailBytes, res.DroppedOffset)
			}
			return nil
		},
	}
	f.register(cmd, readOnly)
	cmd.Flags().StringVar(&walfile, "walfile", "", "WAL file to read (required)")
	cmd.Flags().BoolVar(&header, "header", false, "print only the batch headers")
	return cmd
}
