package manifest

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
)

// randKey returns a short random user key from a small alphabet, so that
// random files collide on keys often.
func randKey(rng *rand.Rand) []byte {
	b := make([]byte, rng.IntN(6))
	for i := range b {
		b[i] = byte('a' + rng.IntN(4))
	}
	if rng.IntN(10) == 0 {
		b = append(b, 0x00, 0xff)
	}
	return b
}

func randSeq(rng *rand.Rand) base.SeqNum {
	switch rng.IntN(4) {
	case 0:
		return 0
	case 1:
		return base.SeqNumMax
	}
	return base.SeqNum(rng.Uint64N(uint64(base.SeqNumMax)))
}

func randUint(rng *rand.Rand) uint64 {
	switch rng.IntN(3) {
	case 0:
		return 0
	case 1:
		return rng.Uint64()
	}
	return rng.Uint64N(1000)
}

func randEdit(rng *rand.Rand) *VersionEdit {
	e := &VersionEdit{}
	if rng.IntN(2) == 0 {
		e.ComparerName = fmt.Sprintf("cmp-%d", rng.IntN(100))
	}
	if rng.IntN(3) == 0 {
		e.MergeOperatorName = fmt.Sprintf("merge-%d", rng.IntN(100))
	}
	if rng.IntN(3) == 0 {
		e.ManifestFormat = 1 + rng.Uint64N(5)
	}
	if rng.IntN(2) == 0 {
		e.HasLogNumber, e.LogNumber = true, base.FileNum(randUint(rng))
	}
	if rng.IntN(2) == 0 {
		e.HasNextFileNumber, e.NextFileNumber = true, base.FileNum(randUint(rng))
	}
	if rng.IntN(2) == 0 {
		e.HasLastSeq, e.LastSeq = true, randSeq(rng)
	}
	for range rng.IntN(4) {
		if e.DeletedFiles == nil {
			e.DeletedFiles = map[DeletedFileEntry]bool{}
		}
		e.DeletedFiles[DeletedFileEntry{Level: rng.IntN(NumLevelsMax), FileNum: base.FileNum(randUint(rng))}] = true
	}
	for range rng.IntN(4) {
		s1, s2 := randSeq(rng), randSeq(rng)
		m := &FileMetadata{
			FileNum:             base.FileNum(randUint(rng)),
			Size:                randUint(rng),
			Smallest:            base.MakeInternalKey(randKey(rng), randSeq(rng), base.KindSet),
			Largest:             base.MakeInternalKey(randKey(rng), randSeq(rng), base.KindRangeDelete),
			SmallestSeq:         min(s1, s2),
			LargestSeq:          max(s1, s2),
			NumEntries:          randUint(rng),
			NumDeletions:        randUint(rng),
			NumRangeDeletions:   randUint(rng),
			OldestTombstoneTime: randUint(rng),
			MarkedForCompaction: rng.IntN(2) == 0,
		}
		if rng.IntN(2) == 0 {
			m.RawKeySize, m.RawValueSize = randUint(rng), randUint(rng)
			m.NumDataBlocks, m.NumTombstoneDenseBlocks = randUint(rng), randUint(rng)
			m.RangeDeletionsBytesEstimate = randUint(rng)
		}
		if rng.IntN(2) == 0 {
			lo, hi := randUint(rng), randUint(rng)
			m.Secondary = SecondaryRange{Known: true, Min: min(lo, hi), Max: max(lo, hi), Count: randUint(rng)}
			m.SecondaryApplied = randSeq(rng)
		}
		if rng.IntN(2) == 0 {
			m.BlobFiles = randBlobNums(rng)
		}
		if rng.IntN(4) == 0 {
			// An ingested table: every entry at its global seqnum.
			m.GlobalSeqNum = max(randSeq(rng), 1)
			m.SmallestSeq, m.LargestSeq = m.GlobalSeqNum, m.GlobalSeqNum
		}
		if rng.IntN(2) == 0 {
			// A whole-file checksum (its value may be empty).
			m.FileChecksumFuncName = []string{"FileChecksumCrc32c", "test-xxhash64"}[rng.IntN(2)]
			m.FileChecksum = make([]byte, rng.IntN(9))
			for i := range m.FileChecksum {
				m.FileChecksum[i] = byte(rng.Uint32())
			}
			if len(m.FileChecksum) == 0 {
				m.FileChecksum = nil
			}
		}
		e.NewFiles = append(e.NewFiles, NewFileEntry{Level: rng.IntN(NumLevelsMax), Meta: m})
	}
	for range rng.IntN(3) {
		lo := rng.Uint64N(1 << 40)
		e.AddedSecondaryTombstones = append(e.AddedSecondaryTombstones,
			SecondaryTombstone{Lo: lo, Hi: lo + 1 + randUint(rng)%(1<<40), Seq: randSeq(rng)})
	}
	for range rng.IntN(3) {
		e.RetiredSecondaryTombstones = append(e.RetiredSecondaryTombstones, randSeq(rng))
	}
	for range rng.IntN(3) {
		b := &BlobFileMetadata{FileNum: randBlobNum(rng), TotalCount: randUint(rng), TotalBytes: randUint(rng), Size: randUint(rng)}
		switch rng.IntN(3) {
		case 0:
			b.ChecksumMethod = "crc32c"
			b.ChecksumValue = binary.LittleEndian.AppendUint32(nil, rng.Uint32())
		case 1:
			b.ChecksumMethod = "xxhash64" // a method whose value is unknown
		}
		e.NewBlobFiles = append(e.NewBlobFiles, b)
	}
	for range rng.IntN(3) {
		g := BlobGarbage{FileNum: randBlobNum(rng), Count: randUint(rng), Bytes: randUint(rng)}
		if rng.IntN(2) == 0 {
			g.Time = randUint(rng)
		}
		e.BlobGarbage = append(e.BlobGarbage, g)
	}
	for range rng.IntN(3) {
		e.DeletedBlobFiles = append(e.DeletedBlobFiles, randBlobNum(rng))
	}
	return e
}

// randBlobNum returns a blob file number: never 0, which means none.
func randBlobNum(rng *rand.Rand) base.FileNum {
	return base.FileNum(max(1, randUint(rng)))
}

// randBlobNums returns a table's blob references: ascending, distinct, at
// least one.
func randBlobNums(rng *rand.Rand) []base.FileNum {
	nums := []base.FileNum{randBlobNum(rng)}
	for range rng.IntN(6) {
		nums = append(nums, randBlobNum(rng))
	}
	slices.Sort(nums)
	return slices.Compact(nums)
}

// editsEqual compares the persisted content of two edits.
func editsEqual(a, b *VersionEdit) bool {
	if len(a.DeletedFiles) == 0 && len(b.DeletedFiles) == 0 {
		a2, b2 := *a, *b
		a2.DeletedFiles, b2.DeletedFiles = nil, nil
		a, b = &a2, &b2
	}
	if len(a.NewFiles) != len(b.NewFiles) {
		return false
	}
	for i := range a.NewFiles {
		x, y := a.NewFiles[i], b.NewFiles[i]
		if x.Level != y.Level || !metaEqual(x.Meta, y.Meta) {
			return false
		}
	}
	a2, b2 := *a, *b
	a2.NewFiles, b2.NewFiles = nil, nil
	return reflect.DeepEqual(a2, b2)
}

func metaEqual(a, b *FileMetadata) bool {
	keyEq := func(x, y base.InternalKey) bool {
		return string(x.UserKey) == string(y.UserKey) && x.Trailer == y.Trailer
	}
	return a.FileNum == b.FileNum && a.Size == b.Size &&
		keyEq(a.Smallest, b.Smallest) && keyEq(a.Largest, b.Largest) &&
		a.SmallestSeq == b.SmallestSeq && a.LargestSeq == b.LargestSeq &&
		a.NumEntries == b.NumEntries && a.NumDeletions == b.NumDeletions &&
		a.NumRangeDeletions == b.NumRangeDeletions &&
		a.OldestTombstoneTime == b.OldestTombstoneTime &&
		a.MarkedForCompaction == b.MarkedForCompaction &&
		a.RawKeySize == b.RawKeySize && a.RawValueSize == b.RawValueSize &&
		a.NumDataBlocks == b.NumDataBlocks && a.NumTombstoneDenseBlocks == b.NumTombstoneDenseBlocks &&
		a.RangeDeletionsBytesEstimate == b.RangeDeletionsBytesEstimate &&
		a.Secondary == b.Secondary && a.SecondaryApplied == b.SecondaryApplied &&
		bytes.Equal(a.FileChecksum, b.FileChecksum) && a.FileChecksumFuncName == b.FileChecksumFuncName &&
		slices.Equal(a.BlobFiles, b.BlobFiles) && a.GlobalSeqNum == b.GlobalSeqNum
}

func TestEditRoundTripRandom(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	for i := range 2000 {
		e := randEdit(rng)
		enc := e.Encode(nil)
		var d VersionEdit
		if err := d.Decode(enc, "MANIFEST-000007", 100); err != nil {
			t.Fatalf("seed %d, edit %d: decode: %v", seed, i, err)
		}
		if !editsEqual(e, &d) {
			t.Fatalf("seed %d, edit %d: round trip mismatch:\n%+v\n%+v", seed, i, e, &d)
		}
		// Encoding is deterministic, and the decoded copy re-encodes the same.
		if enc2 := d.Encode(nil); string(enc2) != string(enc) {
			t.Fatalf("seed %d, edit %d: re-encoding differs", seed, i)
		}
		// The decoded edit does not alias the input.
		for j := range enc {
			enc[j] = 0xee
		}
		if !editsEqual(e, &d) {
			t.Fatalf("seed %d, edit %d: decoded edit aliases its input", seed, i)
		}
	}
}

func TestEditDecodeExamples(t *testing.T) {
	full := &VersionEdit{
		ComparerName: "leveldb.BytewiseComparator",
		HasLogNumber: true, LogNumber: 9,
		HasNextFileNumber: true, NextFileNumber: 12,
		HasLastSeq: true, LastSeq: 300,
		DeletedFiles: map[DeletedFileEntry]bool{{Level: 1, FileNum: 4}: true},
		NewFiles: []NewFileEntry{{Level: 2, Meta: &FileMetadata{
			FileNum: 11, Size: 4096,
			Smallest:    base.MakeInternalKey([]byte("a"), 5, base.KindSet),
			Largest:     base.MakeRangeDeleteSentinel([]byte("z")),
			SmallestSeq: 5, LargestSeq: 200, NumEntries: 10, NumDeletions: 3,
			NumRangeDeletions: 1, OldestTombstoneTime: 1700000000, MarkedForCompaction: true,
		}}},
	}
	enc := full.Encode(nil)
	// The first bytes are the comparer tag, its length and its name.
	if enc[0] != tagComparer || int(enc[1]) != len(full.ComparerName) {
		t.Fatalf("unexpected prefix % x", enc[:2])
	}

	var ignorable []byte
	ignorable = binary.AppendUvarint(ignorable, tagSafeToIgnore|77)
	ignorable = binary.AppendUvarint(ignorable, 3)
	ignorable = append(ignorable, "xyz"...)
	var d VersionEdit
	if err := d.Decode(append(append([]byte{}, ignorable...), enc...), "M", 0); err != nil {
		t.Fatalf("ignorable tag rejected: %v", err)
	}
	if !editsEqual(full, &d) {
		t.Fatalf("mismatch after ignorable tag")
	}

	unknown := binary.AppendUvarint(nil, 77)
	unknown = append(unknown, 0)
	err := d.Decode(unknown, "MANIFEST-000003", 42)
	var ce *base.CorruptionError
	if !errors.Is(err, base.ErrCorruption) || !errors.As(err, &ce) || ce.File != "MANIFEST-000003" || ce.Offset != 42 {
		t.Fatalf("unknown tag: got %v", err)
	}

	// Custom fields: an unknown ignorable one is skipped, an unknown
	// mandatory one is corruption.
	newFile := func(custom ...byte) []byte {
		b := []byte{tagNewFile, 1, 5, 10}
		k := base.MakeInternalKey([]byte("k"), 1, base.KindSet).AppendEncoded(nil)
		b = append(b, byte(len(k)))
		b = append(b, k...)
		b = append(b, byte(len(k)))
		b = append(b, k...)
		b = append(b, 1, 1)
		b = append(b, custom...)
		return append(b, customTerminate)
	}
	if err := d.Decode(newFile(customSafeToIgnore|50, 2, 0xaa, 0xbb, customNumEntries, 1, 7), "M", 0); err != nil {
		t.Fatalf("ignorable custom field: %v", err)
	}
	if d.NewFiles[0].Meta.NumEntries != 7 || d.NewFiles[0].Meta.FileNum != 5 || d.NewFiles[0].Level != 1 {
		t.Fatalf("decoded %+v", d.NewFiles[0].Meta)
	}
	for _, bad := range [][]byte{
		newFile(9, 1, 0),                   // unknown mandatory custom field
		newFile(customNumEntries, 2, 0x80), // truncated varint in field
		newFile(customNumEntries, 2, 1, 1), // trailing bytes in field
		newFile(customMarkedForCompaction, 1, 2),
		newFile()[:len(newFile())-1],      // missing terminator
		{tagDeletedFile, NumLevelsMax, 1}, // level out of range
		{tagComparer, 0},                  // empty comparer
		{tagComparer, 5, 'a'},             // string past the end
		{tagLastSeq, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, // seq > 56 bits
		{tagLogNumber},
	} {
		if err := d.Decode(bad, "M", 0); !errors.Is(err, base.ErrCorruption) {
			t.Errorf("decode % x: got %v, want corruption", bad, err)
		}
	}
}

// TestEditDecodeDamaged decodes every truncation and every single-bit flip
// of encoded edits: no panic, and a truncation inside a field is an error.
func TestEditDecodeDamaged(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	for range 50 {
		enc := randEdit(rng).Encode(nil)
		var d VersionEdit
		for n := range len(enc) {
			_ = d.Decode(enc[:n], "M", 0)
		}
		buf := make([]byte, len(enc))
		for i := range len(enc) * 8 {
			copy(buf, enc)
			buf[i/8] ^= 1 << (i % 8)
			if err := d.Decode(buf, "M", 0); err != nil && !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("seed %d: non-corruption error %v", seed, err)
			}
		}
	}
	// A truncation that cuts a new-file record is always detected: the
	// terminator is missing.
	e := &VersionEdit{NewFiles: []NewFileEntry{{Level: 0, Meta: &FileMetadata{
		FileNum: 1, Smallest: base.MakeInternalKey([]byte("a"), 1, base.KindSet),
		Largest: base.MakeInternalKey([]byte("b"), 1, base.KindSet), SmallestSeq: 1, LargestSeq: 1,
	}}}}
	enc := e.Encode(nil)
	var d VersionEdit
	for n := 1; n < len(enc); n++ {
		if err := d.Decode(enc[:n], "M", 0); !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("truncation to %d bytes: got %v", n, err)
		}
	}
}

func FuzzEditDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		f.Add(randEdit(rng).Encode(nil))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d VersionEdit
		if err := d.Decode(data, "M", 0); err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("non-corruption error %v", err)
			}
			return
		}
		// Whatever decodes re-encodes to something that decodes the same.
		var d2 VersionEdit
		if err := d2.Decode(d.Encode(nil), "M", 0); err != nil || !editsEqual(&d, &d2) {
			t.Fatalf("re-encode: %v", err)
		}
	})
}

// TestEditDecodeBeforeCompactionStats decodes a new-file record as shale
// wrote it before the raw sizes, block counts and range-deletion estimate
// were recorded (bytes taken from that version's encoder): it opens, the
// new fields read as zero, and re-encoding gives the same bytes.
func TestEditDecodeBeforeCompactionStats(t *testing.T) {
	const old = "1401011a6c6576656c64622e4279746577697365436f6d70617261746f720209030c04ac0267060b802009610105000000000000097a000700000000000005c80102010a030103040101050580e2cfaa0606010101"
	enc, err := hex.DecodeString(old)
	if err != nil {
		t.Fatal(err)
	}
	var d VersionEdit
	if err := d.Decode(enc, "MANIFEST-000001", 0); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if len(d.NewFiles) != 1 {
		t.Fatalf("decoded %d new files", len(d.NewFiles))
	}
	m := d.NewFiles[0].Meta
	if m.FileNum != 11 || m.NumEntries != 10 || m.NumDeletions != 3 || !m.MarkedForCompaction || d.NewFiles[0].Level != 6 {
		t.Fatalf("decoded %+v", m)
	}
	if m.RawKeySize != 0 || m.RawValueSize != 0 || m.NumDataBlocks != 0 || m.NumTombstoneDenseBlocks != 0 || m.RangeDeletionsBytesEstimate != 0 {
		t.Fatalf("fields the old encoder did not write read as non-zero: %+v", m)
	}
	// Re-encoding adds the oldest tombstone time to the nanosecond (field
	// 84, the seconds of field 5 in nanoseconds); the rest is unchanged.
	re := d.Encode(nil)
	nanos := binary.AppendUvarint(nil, customOldestTombstoneNanos)
	nanos = binary.AppendUvarint(nanos, uint64(uvarintLen(m.OldestTombstoneTime)))
	nanos = binary.AppendUvarint(nanos, m.OldestTombstoneTime)
	if m.OldestTombstoneTime == 0 || !bytes.Contains(re, nanos) {
		t.Fatalf("re-encoded %x lacks the nanoseconds field of time %d", re, m.OldestTombstoneTime)
	}
	if got := hex.EncodeToString(bytes.Replace(re, nanos, nil, 1)); got != old {
		t.Fatalf("re-encoded as %s", got)
	}
}

// TestEditCompactionStatsIgnorable checks that the fields added for
// compaction picking carry the safe-to-ignore bit (so a reader that
// predates them skips them), and that a record holding them still decodes
// when they are skipped the way such a reader skips them.
func TestEditCompactionStatsIgnorable(t *testing.T) {
	for _, tag := range []int{customRawKeySize, customRawValueSize, customNumDataBlocks,
		customNumTombstoneDenseBlocks, customRangeDeletionsBytesEstimate} {
		if tag&customSafeToIgnore == 0 {
			t.Errorf("custom field %d lacks the safe-to-ignore bit: older readers would refuse the MANIFEST", tag)
		}
	}
	e := &VersionEdit{NewFiles: []NewFileEntry{{Level: 3, Meta: &FileMetadata{
		FileNum: 4, Size: 100,
		Smallest: base.MakeInternalKey([]byte("a"), 1, base.KindSet), Largest: base.MakeInternalKey([]byte("b"), 2, base.KindSet),
		SmallestSeq: 1, LargestSeq: 2, NumEntries: 2,
		RawKeySize: 18, RawValueSize: 1000, NumDataBlocks: 3, NumTombstoneDenseBlocks: 1, RangeDeletionsBytesEstimate: 7,
	}}}}
	enc := e.Encode(nil)
	// Strip the new fields as an old reader's default branch would skip
	// them: what remains is the record without them.
	m := e.NewFiles[0].Meta
	without := &FileMetadata{FileNum: m.FileNum, Size: m.Size, Smallest: m.Smallest, Largest: m.Largest,
		SmallestSeq: m.SmallestSeq, LargestSeq: m.LargestSeq, NumEntries: m.NumEntries}
	plain := (&VersionEdit{NewFiles: []NewFileEntry{{Level: 3, Meta: without}}}).Encode(nil)
	if len(enc) <= len(plain) || string(enc[:len(plain)-1]) != string(plain[:len(plain)-1]) {
		t.Fatalf("the new fields are not appended after the old ones:\n% x\n% x", enc, plain)
	}
	var d VersionEdit
	if err := d.Decode(enc, "M", 0); err != nil || !editsEqual(e, &d) {
		t.Fatalf("round trip: %v", err)
	}
}

// TestEditSecondaryTombstones checks the secondary delete fields: the
// tombstone tags lack the safe-to-ignore bit (a reader that does not know
// them must refuse the MANIFEST, not show deleted data again), the table
// fields carry it, a record without them decodes as before (no range known,
// nothing applied), and a malformed tombstone is corruption.
func TestEditSecondaryTombstones(t *testing.T) {
	for _, tag := range []int{tagSecondaryTombstone, tagRetireSecondary} {
		if tag&tagSafeToIgnore != 0 {
			t.Errorf("tag %d is safe to ignore: an older reader would drop secondary tombstones", tag)
		}
	}
	for _, tag := range []int{customSecondaryMin, customSecondaryMax, customSecondaryCount, customSecondaryApplied} {
		if tag&customSafeToIgnore == 0 {
			t.Errorf("custom field %d lacks the safe-to-ignore bit", tag)
		}
	}
	// A reader that does not know tag 140 (an older shale) refuses it.
	enc := (&VersionEdit{AddedSecondaryTombstones: []SecondaryTombstone{{Lo: 1, Hi: 9, Seq: 5}}}).Encode(nil)
	var d VersionEdit
	if err := d.Decode(enc, "M", 0); err != nil || len(d.AddedSecondaryTombstones) != 1 || d.AddedSecondaryTombstones[0] != (SecondaryTombstone{Lo: 1, Hi: 9, Seq: 5}) {
		t.Fatalf("round trip: %+v, %v", d, err)
	}
	unknown := append(binary.AppendUvarint(nil, 142), enc[1:]...)
	if err := d.Decode(unknown, "M", 0); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("an unknown tag without the safe-to-ignore bit decoded: %v", err)
	}
	empty := (&VersionEdit{AddedSecondaryTombstones: []SecondaryTombstone{{Lo: 9, Hi: 9, Seq: 5}}}).Encode(nil)
	if err := d.Decode(empty, "M", 0); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("an empty secondary range decoded: %v", err)
	}
	// The record of TestEditDecodeBeforeCompactionStats: no secondary
	// fields, so the range is unknown (the table may hold anything).
	old, _ := hex.DecodeString("1401011a6c6576656c64622e4279746577697365436f6d70617261746f720209030c04ac0267060b802009610105000000000000097a000700000000000005c80102010a030103040101050580e2cfaa0606010101")
	if err := d.Decode(old, "M", 0); err != nil {
		t.Fatal(err)
	}
	m := d.NewFiles[0].Meta
	if m.Secondary.Known || m.SecondaryApplied != 0 || !m.MayHoldDeletedBy(SecondaryTombstone{Lo: 0, Hi: 1, Seq: base.SeqNumMax}) {
		t.Fatalf("a table recorded before secondary ranges reads as %+v, applied %d", m.Secondary, m.SecondaryApplied)
	}
	// A known empty range (count 0) round-trips and deletes nothing.
	known := &VersionEdit{NewFiles: []NewFileEntry{{Level: 1, Meta: &FileMetadata{FileNum: 3,
		Smallest: base.MakeInternalKey([]byte("a"), 1, base.KindSet), Largest: base.MakeInternalKey([]byte("b"), 2, base.KindSet),
		SmallestSeq: 1, LargestSeq: 2, Secondary: SecondaryRange{Known: true}}}}}
	if err := d.Decode(known.Encode(nil), "M", 0); err != nil || !d.NewFiles[0].Meta.Secondary.Known ||
		d.NewFiles[0].Meta.MayHoldDeletedBy(SecondaryTombstone{Lo: 0, Hi: 100, Seq: 9}) {
		t.Fatalf("known empty range: %+v, %v", d.NewFiles[0].Meta.Secondary, err)
	}
}

// TestApplySecondaryTombstones checks that versions carry the live
// secondary tombstones in seqnum order, that retirements remove them, and
// that retiring an unknown one or adding one twice fails.
func TestApplySecondaryTombstones(t *testing.T) {
	cmp := base.DefaultComparer
	v, err := Apply(cmp, 7, nil,
		&VersionEdit{AddedSecondaryTombstones: []SecondaryTombstone{{Lo: 1, Hi: 5, Seq: 20}}},
		&VersionEdit{AddedSecondaryTombstones: []SecondaryTombstone{{Lo: 3, Hi: 4, Seq: 10}, {Lo: 0, Hi: 9, Seq: 30}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(v.SecondaryTombstones); got != "[[3,4)@10 [1,5)@20 [0,9)@30]" {
		t.Fatalf("live tombstones %s", got)
	}
	v2, err := Apply(cmp, 7, v, &VersionEdit{RetiredSecondaryTombstones: []base.SeqNum{20}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(v2.SecondaryTombstones); got != "[[3,4)@10 [0,9)@30]" {
		t.Fatalf("after retiring @20: %s", got)
	}
	if got := fmt.Sprint(v.SecondaryTombstones); got != "[[3,4)@10 [1,5)@20 [0,9)@30]" {
		t.Fatalf("the base version changed: %s", got)
	}
	if _, err := Apply(cmp, 7, v2, &VersionEdit{RetiredSecondaryTombstones: []base.SeqNum{20}}); err == nil {
		t.Fatal("retiring a retired tombstone succeeded")
	}
	if _, err := Apply(cmp, 7, v2, &VersionEdit{AddedSecondaryTombstones: []SecondaryTombstone{{Lo: 1, Hi: 2, Seq: 10}}}); err == nil {
		t.Fatal("adding a tombstone twice succeeded")
	}
}
