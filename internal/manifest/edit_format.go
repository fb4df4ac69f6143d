package manifest

import (
	"fmt"
	"strings"
)

// String formats e for people (shale manifest_dump), one field per line,
// in the order the fields apply, each line indented by two spaces:
//
//	comparer: leveldb.BytewiseComparator
//	log number: 000004
//	next file number: 8
//	last seqnum: 12
//	deleted file: L0 000005
//	new file: L1 000007:[a#10,SET-c#12,SET] size=1024 seqnums=10-12 entries=3 deletions=0 range-deletions=0 blobs=000006
//	new blob file: 000006:3/96 size=210 checksum=xxhash64:0a1b...
//	blob garbage: 000006 +1/32
//	deleted blob file: 000006
//
// Fields the edit leaves unchanged are not printed; an empty edit prints
// "(empty edit)".
func (e *VersionEdit) String() string {
	var b strings.Builder
	line := func(format string, args ...any) {
		b.WriteString("  ")
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	if e.ManifestFormat != 0 {
		line("manifest format: %d", e.ManifestFormat)
	}
	if e.ComparerName != "" {
		line("comparer: %s", e.ComparerName)
	}
	if e.MergeOperatorName != "" {
		line("merge operator: %s", e.MergeOperatorName)
	}
	if e.HasLogNumber {
		line("log number: %s", e.LogNumber)
	}
	if e.HasNextFileNumber {
		line("next file number: %d", e.NextFileNumber)
	}
	if e.HasLastSeq {
		line("last seqnum: %d", e.LastSeq)
	}
	for _, d := range e.sortedDeletedFiles() {
		line("deleted file: L%d %s", d.Level, d.FileNum)
	}
	for _, nf := range e.NewFiles {
		line("new file: L%d %s", nf.Level, FormatFile(nf.Meta))
	}
	for _, seq := range e.RetiredSecondaryTombstones {
		line("retired secondary tombstone: #%d", seq)
	}
	for _, t := range e.AddedSecondaryTombstones {
		line("secondary tombstone: %s", t)
	}
	for _, bf := range e.NewBlobFiles {
		s := fmt.Sprintf("new blob file: %s size=%d", bf, bf.Size)
		if bf.ChecksumMethod != "" {
			s += fmt.Sprintf(" checksum=%s:%x", bf.ChecksumMethod, bf.ChecksumValue)
		}
		line("%s", s)
	}
	for _, g := range e.BlobGarbage {
		line("blob garbage: %s +%d/%d", g.FileNum, g.Count, g.Bytes)
	}
	for _, n := range e.DeletedBlobFiles {
		line("deleted blob file: %s", n)
	}
	if b.Len() == 0 {
		return "  (empty edit)\n"
	}
	return b.String()
}

// FormatFile formats a table's metadata on one line: number, key range,
// size, seqnums, counts, and the blob files it references.
func FormatFile(f *FileMetadata) string {
	s := fmt.Sprintf("%s:[%s-%s] size=%d seqnums=%d-%d entries=%d deletions=%d range-deletions=%d",
		f.FileNum, formatKey(f.Smallest), formatKey(f.Largest), f.Size, f.SmallestSeq, f.LargestSeq,
		f.NumEntries, f.NumDeletions, f.NumRangeDeletions)
	if len(f.BlobFiles) > 0 {
		s += " blobs=" + formatFileNums(f.BlobFiles)
	}
	return s
}
