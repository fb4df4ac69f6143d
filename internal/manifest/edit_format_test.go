package manifest

import (
	"testing"

	"github.com/shaledb/shale/internal/base"
)

// TestEditString prints an edit holding every kind of field, and an empty
// one, as manifest_dump shows them; the edit goes through Encode and
// Decode first, so what is printed is what a MANIFEST holds.
func TestEditString(t *testing.T) {
	in := &VersionEdit{
		ManifestFormat: ManifestFormatV1, ComparerName: "leveldb.BytewiseComparator", MergeOperatorName: "StringAppendOperator",
		HasLogNumber: true, LogNumber: 4, HasNextFileNumber: true, NextFileNumber: 9, HasLastSeq: true, LastSeq: 12,
		DeletedFiles: map[DeletedFileEntry]bool{{Level: 0, FileNum: 5}: true},
		NewFiles: []NewFileEntry{{Level: 1, Meta: &FileMetadata{FileNum: 7, Size: 1024,
			Smallest: base.MakeInternalKey([]byte("a"), 10, base.KindSet), Largest: base.MakeInternalKey([]byte("c"), 12, base.KindBlobIndex),
			SmallestSeq: 10, LargestSeq: 12, NumEntries: 3, NumDeletions: 1, BlobFiles: []base.FileNum{6}}}},
		AddedSecondaryTombstones:   []SecondaryTombstone{{Lo: 1, Hi: 5, Seq: 11}},
		RetiredSecondaryTombstones: []base.SeqNum{8},
		NewBlobFiles:               []*BlobFileMetadata{{FileNum: 6, TotalCount: 3, TotalBytes: 96, Size: 210, ChecksumMethod: "crc32c", ChecksumValue: []byte{1, 2, 3, 4}}},
		BlobGarbage:                []BlobGarbage{{FileNum: 3, Count: 1, Bytes: 32}},
		DeletedBlobFiles:           []base.FileNum{2},
	}
	var e VersionEdit
	if err := e.Decode(in.Encode(nil), "MANIFEST-000001", 0); err != nil {
		t.Fatal(err)
	}
	want := `  manifest format: 1
  comparer: leveldb.BytewiseComparator
  merge operator: StringAppendOperator
  log number: 000004
  next file number: 9
  last seqnum: 12
  deleted file: L0 000005
  new file: L1 000007:[a#10,SET-c#12,BLOBINDEX] size=1024 seqnums=10-12 entries=3 deletions=1 range-deletions=0 blobs=000006
  retired secondary tombstone: #8
  secondary tombstone: [1,5)@11
  new blob file: 000006:3/96 size=210 checksum=crc32c:01020304
  blob garbage: 000003 +1/32
  deleted blob file: 000002
`
	if got := e.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := (&VersionEdit{}).String(); got != "  (empty edit)\n" {
		t.Errorf("empty edit: %q", got)
	}
}
