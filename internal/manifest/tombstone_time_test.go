package manifest

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
)

// TestOldestTombstoneTimeEncoding checks the two fields of a file's oldest
// tombstone time: a record written before the nanoseconds field existed (the
// seconds alone) still decodes, to the second; a new record carries both, so
// a reader that skips the ignorable nanoseconds field still has the seconds.
func TestOldestTombstoneTimeEncoding(t *testing.T) {
	k := base.MakeInternalKey([]byte("k"), 1, base.KindDelete).AppendEncoded(nil)
	record := func(custom ...byte) []byte {
		b := []byte{tagNewFile, 1, 5, 10}
		b = append(b, byte(len(k)))
		b = append(b, k...)
		b = append(b, byte(len(k)))
		b = append(b, k...)
		b = append(b, 1, 1)
		b = append(b, custom...)
		return append(b, customTerminate)
	}
	field := func(tag uint64, v uint64) []byte {
		b := binary.AppendUvarint(nil, tag)
		b = binary.AppendUvarint(b, uint64(uvarintLen(v)))
		return binary.AppendUvarint(b, v)
	}
	const secs = 1700000123
	// The bytes the encoder wrote before: num deletions 1, then the time in
	// seconds.
	old := record(append(field(customNumDeletions, 1), field(customOldestTombstoneTime, secs)...)...)
	var e VersionEdit
	if err := e.Decode(old, "MANIFEST-000001", 0); err != nil {
		t.Fatal(err)
	}
	if got := e.NewFiles[0].Meta.OldestTombstoneTime; got != secs*uint64(time.Second) {
		t.Fatalf("old record: OldestTombstoneTime = %d, want %d", got, secs*uint64(time.Second))
	}

	nanos := uint64(secs)*uint64(time.Second) + 456789
	m := &FileMetadata{FileNum: 5, Size: 10, NumDeletions: 1, OldestTombstoneTime: nanos,
		Smallest: base.MakeInternalKey([]byte("k"), 1, base.KindDelete), Largest: base.MakeInternalKey([]byte("k"), 1, base.KindDelete),
		SmallestSeq: 1, LargestSeq: 1}
	enc := (&VersionEdit{NewFiles: []NewFileEntry{{Level: 1, Meta: m}}}).Encode(nil)
	if err := e.Decode(enc, "M", 0); err != nil {
		t.Fatal(err)
	}
	if got := e.NewFiles[0].Meta.OldestTombstoneTime; got != nanos {
		t.Fatalf("new record: OldestTombstoneTime = %d, want %d", got, nanos)
	}
	// A reader that does not know field 84 skips it (it carries the
	// ignorable bit) and reads the seconds: drop the field to see that.
	nf := field(customOldestTombstoneNanos, nanos)
	if customOldestTombstoneNanos&customSafeToIgnore == 0 || !bytes.Contains(enc, nf) {
		t.Fatalf("the nanoseconds field is not an ignorable field of the record % x", enc)
	}
	stripped := bytes.Replace(enc, nf, nil, 1)
	if err := e.Decode(stripped, "M", 0); err != nil {
		t.Fatal(err)
	}
	if got := e.NewFiles[0].Meta.OldestTombstoneTime; got != secs*uint64(time.Second) {
		t.Fatalf("without the nanoseconds field: OldestTombstoneTime = %d, want %d", got, secs*uint64(time.Second))
	}
}
