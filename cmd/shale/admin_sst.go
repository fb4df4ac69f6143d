package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/shaledb/shale/blob"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
	"github.com/spf13/cobra"
)

// blobMagic is the first 8 bytes of a blob file (blob's header magic,
// little-endian), by which sst_dump tells a blob file from a table.
const blobMagic = 0xb10bf11e5ba1e001

func newSSTDumpCmd() *cobra.Command {
	var (
		f              adminFlags
		kr             keyRange
		file           string
		command        string
		showProperties bool
	)
	cmd := &cobra.Command{
		Use:   "sst_dump --file F [--command=scan|raw|verify|check] [--show_properties] [--from K] [--to K]",
		Short: "Inspect one table or blob file: scan its entries, dump its blocks, verify its checksums (reads the file only)",
		Long: `sst_dump reads one file, a table (.sst) or a blob file (.blob, told by its
magic number), as RocksDB's sst_dump does:

  scan    print every entry: a table's internal entries (KEY @ SEQNUM : KIND
          => VALUE, blob indexes decoded), a blob file's records (offset,
          size, key, value); --from, --to and --max_keys limit it
  raw     print the file's blocks in file order (kind, offset, length) and
          each data block's entries (a blob file: each record's offset and
          size)
  verify  check every block's checksum (and a blob file's whole-file
          checksum)
  check   read every entry, checking checksums, decoding and order, and
          compare the count with what the file records

--show_properties prints the table properties (a blob file's header and
footer) first. Damage is reported with the file and offset; exit status 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return errors.New("--file is required")
			}
			switch command {
			case "scan", "raw", "verify", "check":
			default:
				return fmt.Errorf("--command must be scan, raw, verify or check, got %q", command)
			}
			if err := kr.decode(cmd, &f); err != nil {
				return err
			}
			fs := f.fs()
			isBlob, err := isBlobFile(fs, file)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if isBlob {
				return sstDumpBlob(out, fs, file, command, showProperties, &f, &kr)
			}
			return sstDumpTable(out, fs, file, command, showProperties, &f, &kr)
		},
	}
	f.register(cmd, readOnly)
	kr.register(cmd, true, false)
	cmd.Flags().StringVar(&file, "file", "", "table or blob file to read (required)")
	cmd.Flags().StringVar(&command, "command", "scan", "scan, raw, verify or check")
	cmd.Flags().BoolVar(&showProperties, "show_properties", false, "print the file's properties")
	return cmd
}

// isBlobFile says whether the file at path is a blob file: its name ends
// in .blob, or it starts with the blob header magic.
func isBlobFile(fs vfs.FS, path string) (bool, error) {
	if strings.HasSuffix(path, ".blob") {
		return true, nil
	}
	file, err := fs.Open(path)
	if err != nil {
		return false, err
	}
	defer file.Close()
	var m [8]byte
	if _, err := file.ReadAt(m[:], 0); err != nil && err != io.EOF {
		return false, err
	}
	return binary.LittleEndian.Uint64(m[:]) == blobMagic, nil
}

func printTableProperties(out io.Writer, p *sstable.Properties) {
	fmt.Fprintf(out, "properties:\n")
	fmt.Fprintf(out, "  # entries: %d\n  # deletions: %d\n  # range deletions: %d\n", p.NumEntries, p.NumDeletions, p.NumRangeDeletions)
	fmt.Fprintf(out, "  raw key size: %d\n  raw value size: %d\n", p.RawKeySize, p.RawValueSize)
	fmt.Fprintf(out, "  # data blocks: %d\n  # tombstone-dense blocks: %d\n", p.NumDataBlocks, p.NumTombstoneDenseBlocks)
	fmt.Fprintf(out, "  data size: %d\n  index size: %d\n  filter size: %d\n", p.DataSize, p.IndexSize, p.FilterSize)
	fmt.Fprintf(out, "  comparator: %s\n  compression: %s\n  creation time: %d\n", p.ComparerName, p.CompressionName, p.CreationTime)
	fmt.Fprintf(out, "  seqnums: %d-%d\n", p.SmallestSeq, p.LargestSeq)
	if p.PrefixExtractorName != "" {
		fmt.Fprintf(out, "  prefix extractor: %s\n", p.PrefixExtractorName)
	}
	fmt.Fprintf(out, "  whole key filtering: %v\n  prefix filtering: %v\n", p.WholeKeyFiltering, p.PrefixFiltering)
	for _, k := range slices.Sorted(maps.Keys(p.User)) {
		fmt.Fprintf(out, "  %s: %s\n", k, p.User[k])
	}
}

func sstDumpTable(out io.Writer, fs vfs.FS, path, command string, showProps bool, f *adminFlags, kr *keyRange) (err error) {
	r, err := openTable(fs, path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := r.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if showProps {
		printTableProperties(out, r.Properties())
	}
	switch command {
	case "scan":
		n := 0
		var ferr error
		err := tableEntries(r, kr, func(key []byte, seq base.SeqNum, kind base.Kind, value []byte) bool {
			if kr.maxKeys > 0 && n >= kr.maxKeys {
				return false
			}
			var s string
			if s, ferr = formatEntry(f, path, key, seq, kind, value); ferr != nil {
				return false
			}
			fmt.Fprintln(out, s)
			n++
			return true
		})
		return errors.Join(err, ferr)
	case "raw":
		blocks, err := r.Layout()
		if err != nil {
			return err
		}
		for i, b := range blocks {
			fmt.Fprintf(out, "block %d: %s offset %d length %d", i, b.Kind, b.Offset, b.Length)
			if b.Kind != "data" {
				fmt.Fprintln(out)
				continue
			}
			fmt.Fprintf(out, " separator %s\n", f.encodeKey(b.Separator.UserKey))
			var ferr error
			err := r.DataBlockEntries(b, func(k base.InternalKey, v []byte) {
				if ferr != nil {
					return
				}
				var s string
				s, ferr = formatEntry(f, path, k.UserKey, k.SeqNum(), k.Kind(), v)
				fmt.Fprintf(out, "  %s\n", s)
			})
			if err := errors.Join(err, ferr); err != nil {
				return err
			}
		}
		for _, sp := range r.RangeTombstones() {
			fmt.Fprintf(out, "range tombstone: [%s, %s) seqnums %v\n", f.encodeKey(sp.Start), f.encodeKey(sp.End), sp.Seqs)
		}
		return nil
	case "verify":
		if err := r.VerifyChecksums(); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: every block checksum verified\n", path)
		return nil
	default: // check
		var n uint64
		err := tableEntries(r, &keyRange{}, func(_ []byte, _ base.SeqNum, kind base.Kind, _ []byte) bool {
			if kind != base.KindRangeDelete {
				n++
			}
			return true
		})
		if err != nil {
			return err
		}
		p := r.Properties()
		if want := p.NumEntries - p.NumRangeDeletions; n != want {
			return base.CorruptionErrorf(path, 0, "table holds %d point entries, its properties record %d", n, want)
		}
		fmt.Fprintf(out, "%s: %d point entries and %d range deletions read, as the properties record\n", path, n, p.NumRangeDeletions)
		return nil
	}
}

func sstDumpBlob(out io.Writer, fs vfs.FS, path, command string, showProps bool, f *adminFlags, kr *keyRange) (err error) {
	r, err := openBlob(fs, path, 0)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := r.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	p := r.Properties()
	if showProps {
		fmt.Fprintf(out, "blob file properties:\n  checksum: %s\n  compression: %s\n  # blobs: %d\n  value bytes: %d\n  file checksum: %#016x\n  size: %d\n",
			p.Checksum, p.Compression, p.Count, p.ValueBytes, p.FileChecksum, p.Size)
	}
	if command == "verify" {
		if err := r.VerifyFileChecksum(); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: whole-file checksum verified\n", path)
		return nil
	}
	it := r.NewIter(blob.IterOptions{})
	defer func() {
		if cerr := it.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	var n uint64
	printed := 0
	for it.Next() {
		n++
		if command == "check" || !kr.contains(it.Key()) || (kr.maxKeys > 0 && printed >= kr.maxKeys) {
			continue
		}
		x := it.Index()
		printed++
		if command == "raw" {
			fmt.Fprintf(out, "record at offset %d size %d %s: key %s, %d value bytes\n", x.Offset, x.Size, x.Compression, f.encodeKey(it.Key()), len(it.Value()))
			continue
		}
		fmt.Fprintf(out, "%s => %s (offset %d size %d)\n", f.encodeKey(it.Key()), f.encodeValue(it.Value()), x.Offset, x.Size)
	}
	if err := it.Error(); err != nil {
		return err
	}
	if command == "check" {
		if n != p.Count {
			return base.CorruptionErrorf(path, 0, "blob file holds %d records, its footer records %d", n, p.Count)
		}
		fmt.Fprintf(out, "%s: %d records read, as the footer records\n", path, n)
	}
	return nil
}
