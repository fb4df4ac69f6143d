package manifest

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/shaledb/shale/internal/base"
)

// checksummedTable is a table with a whole-file checksum recorded.
func checksummedTable() *FileMetadata {
	return &FileMetadata{
		FileNum: 9, Size: 4096,
		Smallest: base.MakeInternalKey([]byte("a"), 1, base.KindSet), Largest: base.MakeInternalKey([]byte("k"), 7, base.KindSet),
		SmallestSeq: 1, LargestSeq: 7, NumEntries: 7,
		FileChecksum: []byte{0xde, 0xad, 0xbe, 0xef}, FileChecksumFuncName: "FileChecksumCrc32c",
	}
}

// customField returns the encoding of custom field tag with value v.
func customField(tag uint64, v []byte) []byte {
	b := binary.AppendUvarint(nil, tag)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// TestFileChecksumFieldsRoundTrip checks that a table's checksum and the
// name of its function are recorded in the new-file record and read back,
// and that a table without one records neither field.
func TestFileChecksumFieldsRoundTrip(t *testing.T) {
	m := checksummedTable()
	enc := (&VersionEdit{NewFiles: []NewFileEntry{{Level: 2, Meta: m}}}).Encode(nil)
	for _, f := range [][]byte{customField(customFileChecksum, m.FileChecksum), customField(customFileChecksumFuncName, []byte(m.FileChecksumFuncName))} {
		if !bytes.Contains(enc, f) {
			t.Fatalf("record % x lacks field % x", enc, f)
		}
	}
	var d VersionEdit
	if err := d.Decode(enc, "M", 0); err != nil {
		t.Fatal(err)
	}
	got := d.NewFiles[0].Meta
	if !bytes.Equal(got.FileChecksum, m.FileChecksum) || got.FileChecksumFuncName != m.FileChecksumFuncName {
		t.Fatalf("decoded checksum %x %q, want %x %q", got.FileChecksum, got.FileChecksumFuncName, m.FileChecksum, m.FileChecksumFuncName)
	}
	// The decoded value does not alias the record.
	enc[bytes.Index(enc, m.FileChecksum)] ^= 0xff
	if !bytes.Equal(got.FileChecksum, m.FileChecksum) {
		t.Fatal("the decoded checksum aliases the encoded record")
	}

	plain := checksummedTable()
	plain.FileChecksum, plain.FileChecksumFuncName = nil, ""
	enc = (&VersionEdit{NewFiles: []NewFileEntry{{Level: 2, Meta: plain}}}).Encode(nil)
	if bytes.Contains(enc, customField(customFileChecksumFuncName, []byte(m.FileChecksumFuncName))) ||
		bytes.Contains(enc, customField(customFileChecksum, m.FileChecksum)) {
		t.Fatalf("a table without a checksum records the field: % x", enc)
	}
}

// TestFileChecksumFieldsIgnorable checks that the checksum fields carry
// the safe-to-ignore bit, and that a reader which does not know them (here:
// the same record with their tags renumbered to unknown ignorable tags, as
// an older shale sees them) decodes the record with everything else intact.
func TestFileChecksumFieldsIgnorable(t *testing.T) {
	for _, tag := range []uint64{customFileChecksum, customFileChecksumFuncName} {
		if tag&customSafeToIgnore == 0 {
			t.Fatalf("custom field %d lacks the safe-to-ignore bit: older readers would refuse the MANIFEST", tag)
		}
	}
	m := checksummedTable()
	enc := (&VersionEdit{NewFiles: []NewFileEntry{{Level: 2, Meta: m}}}).Encode(nil)
	unknown := bytes.Replace(enc, customField(customFileChecksum, m.FileChecksum), customField(customSafeToIgnore|62, m.FileChecksum), 1)
	unknown = bytes.Replace(unknown, customField(customFileChecksumFuncName, []byte(m.FileChecksumFuncName)),
		customField(customSafeToIgnore|63, []byte(m.FileChecksumFuncName)), 1)
	if bytes.Equal(unknown, enc) {
		t.Fatal("renumbering found no field")
	}
	var d VersionEdit
	if err := d.Decode(unknown, "M", 0); err != nil {
		t.Fatalf("a reader skipping the fields refuses the record: %v", err)
	}
	want := checksummedTable()
	want.FileChecksum, want.FileChecksumFuncName = nil, ""
	if !metaEqual(d.NewFiles[0].Meta, want) {
		t.Fatalf("decoded %v, want %v", d.NewFiles[0].Meta, want)
	}
}

// TestFileChecksumFieldsAbsentInOldRecord decodes a new-file record written
// before checksums were recorded: the table has none.
func TestFileChecksumFieldsAbsentInOldRecord(t *testing.T) {
	// The record of TestEditDecodeBeforeCompactionStats.
	const old = "1401011a6c6576656c64622e4279746577697365436f6d70617261746f720209030c04ac0267060b802009610105000000000000097a000700000000000005c80102010a030103040101050580e2cfaa0606010101"
	enc, err := hex.DecodeString(old)
	if err != nil {
		t.Fatal(err)
	}
	var d VersionEdit
	if err := d.Decode(enc, "MANIFEST-000001", 0); err != nil {
		t.Fatal(err)
	}
	if m := d.NewFiles[0].Meta; m.FileChecksum != nil || m.FileChecksumFuncName != "" {
		t.Fatalf("an old record decodes with checksum %x %q", m.FileChecksum, m.FileChecksumFuncName)
	}
}

// TestFileChecksumFieldsHalfRecorded checks that a checksum without the
// name of its function, or a name without a checksum, or an empty name, is
// corruption: the writer records both or neither.
func TestFileChecksumFieldsHalfRecorded(t *testing.T) {
	m := checksummedTable()
	enc := (&VersionEdit{NewFiles: []NewFileEntry{{Level: 2, Meta: m}}}).Encode(nil)
	sum := customField(customFileChecksum, m.FileChecksum)
	name := customField(customFileChecksumFuncName, []byte(m.FileChecksumFuncName))
	for desc, bad := range map[string][]byte{
		"no name":    bytes.Replace(enc, name, nil, 1),
		"no value":   bytes.Replace(enc, sum, nil, 1),
		"empty name": bytes.Replace(enc, name, customField(customFileChecksumFuncName, nil), 1),
	} {
		var d VersionEdit
		if err := d.Decode(bad, "MANIFEST-000004", 0); !errors.Is(err, base.ErrCorruption) {
			t.Errorf("%s: got %v, want corruption", desc, err)
		}
	}
}
