package manifest

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/record"
)

// blobTable returns an L0 table over [k, k] at seq referencing blobs.
func blobTable(n base.FileNum, k string, seq base.SeqNum, blobs ...base.FileNum) *FileMetadata {
	return &FileMetadata{FileNum: n, Size: 100,
		Smallest: base.MakeInternalKey([]byte(k), seq, base.KindSet), Largest: base.MakeInternalKey([]byte(k), seq, base.KindSet),
		SmallestSeq: seq, LargestSeq: seq, BlobFiles: blobs}
}

// TestEditBlobRecordsLayout checks the bytes of each blob record against
// the layout doc.go draws, and that they decode back.
func TestEditBlobRecordsLayout(t *testing.T) {
	e := &VersionEdit{
		NewBlobFiles: []*BlobFileMetadata{{FileNum: 7, TotalCount: 3, TotalBytes: 300, Size: 400,
			ChecksumMethod: "crc32c", ChecksumValue: []byte{1, 2, 3, 4}}},
		BlobGarbage:      []BlobGarbage{{FileNum: 5, Count: 2, Bytes: 150}},
		DeletedBlobFiles: []base.FileNum{4},
	}
	want := []byte{0x90, 0x03, 7, 3, 0xac, 0x02, 0x90, 0x03, 6, 'c', 'r', 'c', '3', '2', 'c', 4, 1, 2, 3, 4, customTerminate,
		0x91, 0x03, 5, 2, 0x96, 0x01, customTerminate,
		0x92, 0x03, 4}
	enc := e.Encode(nil)
	if !bytes.Equal(enc, want) {
		t.Fatalf("encoded\n% x\nwant\n% x", enc, want)
	}
	var d VersionEdit
	if err := d.Decode(enc, "M", 0); err != nil || !editsEqual(e, &d) {
		t.Fatalf("decoded %+v, %v", d, err)
	}

	// A table's references: the first number, then the differences.
	table := &VersionEdit{NewFiles: []NewFileEntry{{Level: 1, Meta: blobTable(9, "k", 1, 4, 5, 300)}}}
	enc = table.Encode(nil)
	refs := []byte{customBlobFiles, 4, 4, 1, 0xa7, 0x02, customTerminate}
	if !bytes.HasSuffix(enc, refs) {
		t.Fatalf("table record % x does not end with the references % x", enc, refs)
	}
	if err := d.Decode(enc, "M", 0); err != nil || !slices.Equal(d.NewFiles[0].Meta.BlobFiles, []base.FileNum{4, 5, 300}) ||
		d.NewFiles[0].Meta.OldestBlobFile() != 4 {
		t.Fatalf("decoded references %v, %v", d.NewFiles, err)
	}
}

// TestBlobGarbageTime checks the date of blob garbage: its field's bytes
// (65, ignorable), that a record without it (written before it existed, or
// by a reader that skipped it) decodes undated, that a damaged one is
// corruption, and that a blob file keeps the oldest date of its garbage
// records, undated ones and records of no garbage leaving it as it is.
func TestBlobGarbageTime(t *testing.T) {
	e := &VersionEdit{BlobGarbage: []BlobGarbage{{FileNum: 5, Count: 2, Bytes: 150, Time: 300}}}
	want := []byte{0x91, 0x03, 5, 2, 0x96, 0x01, customSafeToIgnore | 1, 2, 0xac, 0x02, customTerminate}
	enc := e.Encode(nil)
	if !bytes.Equal(enc, want) || customBlobGarbageTime&customSafeToIgnore == 0 {
		t.Fatalf("encoded\n% x\nwant\n% x", enc, want)
	}
	var d VersionEdit
	if err := d.Decode(enc, "M", 0); err != nil || !editsEqual(e, &d) {
		t.Fatalf("decoded %+v, %v", d, err)
	}
	undated := []byte{0x91, 0x03, 5, 2, 0x96, 0x01, customTerminate}
	if err := d.Decode(undated, "M", 0); err != nil || d.BlobGarbage[0].Time != 0 || d.BlobGarbage[0].Bytes != 150 {
		t.Fatalf("a record without the date: %+v, %v", d, err)
	}
	for name, bad := range map[string][]byte{
		"time past its field":  {0x91, 0x03, 5, 2, 0x96, 0x01, customSafeToIgnore | 1, 1, 0xac, customTerminate},
		"time shorter than it": {0x91, 0x03, 5, 2, 0x96, 0x01, customSafeToIgnore | 1, 2, 1, 0, customTerminate},
	} {
		if err := d.Decode(bad, "M", 0); !errors.Is(err, base.ErrCorruption) {
			t.Errorf("%s (% x): got %v, want corruption", name, bad, err)
		}
	}

	cmp := base.DefaultComparer
	v, err := Apply(cmp, 7, nil, &VersionEdit{
		NewBlobFiles: []*BlobFileMetadata{{FileNum: 5, TotalCount: 10, TotalBytes: 1000, Size: 1100}},
		NewFiles:     []NewFileEntry{{Level: 0, Meta: blobTable(6, "a", 1, 5)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		g    BlobGarbage
		want uint64
	}{
		{BlobGarbage{FileNum: 5, Count: 1, Bytes: 100}, 0},
		{BlobGarbage{FileNum: 5, Count: 1, Bytes: 100, Time: 500}, 500},
		{BlobGarbage{FileNum: 5, Count: 1, Bytes: 100, Time: 700}, 500},
		{BlobGarbage{FileNum: 5, Count: 1, Bytes: 100}, 500},
		{BlobGarbage{FileNum: 5, Time: 100}, 500}, // no garbage, nothing to date
		{BlobGarbage{FileNum: 5, Count: 1, Bytes: 100, Time: 200}, 200},
	} {
		if v, err = Apply(cmp, 7, v, &VersionEdit{BlobGarbage: []BlobGarbage{step.g}}); err != nil {
			t.Fatal(err)
		}
		if got := v.BlobFile(5).OldestGarbageTime; got != step.want {
			t.Fatalf("after %+v: OldestGarbageTime %d, want %d", step.g, got, step.want)
		}
	}
	if _, err := Apply(cmp, 7, nil, &VersionEdit{NewBlobFiles: []*BlobFileMetadata{{FileNum: 8, TotalCount: 1, TotalBytes: 10, Size: 20, OldestGarbageTime: 1}}}); err == nil {
		t.Fatal("a blob file added with a garbage date")
	}
}

// TestEditBlobRecordsRefused checks that an older shale, which does not know
// blob files, refuses a MANIFEST that has them: neither the blob tags nor
// the per-table reference field carry the safe-to-ignore bit, so they meet
// the same "unknown" branch as any tag this reader does not know. It also
// checks the malformed blob records that are corruption.
func TestEditBlobRecordsRefused(t *testing.T) {
	for _, tag := range []int{tagBlobFileAddition, tagBlobFileGarbage, tagDeletedBlobFile} {
		if tag&tagSafeToIgnore != 0 {
			t.Errorf("tag %d is safe to ignore: an older reader would lose blob files", tag)
		}
	}
	if customBlobFiles&customSafeToIgnore != 0 {
		t.Errorf("custom field %d is safe to ignore: an older reader would take blob files for unreferenced", customBlobFiles)
	}
	// What an older reader sees: tags it does not know, without the bit.
	// 403 and custom field 8 stand in for them here.
	var d VersionEdit
	for _, e := range []*VersionEdit{
		{NewBlobFiles: []*BlobFileMetadata{{FileNum: 7, TotalCount: 1, TotalBytes: 10, Size: 20}}},
		{BlobGarbage: []BlobGarbage{{FileNum: 7, Count: 1, Bytes: 10}}},
		{DeletedBlobFiles: []base.FileNum{7}},
	} {
		enc := e.Encode(nil)
		unknown := append(binary.AppendUvarint(nil, 403), enc[2:]...)
		if err := d.Decode(unknown, "M", 0); !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), "unknown tag 403") {
			t.Errorf("record % x with an unknown tag: %v", unknown, err)
		}
	}
	enc := (&VersionEdit{NewFiles: []NewFileEntry{{Level: 1, Meta: blobTable(9, "k", 1, 4)}}}).Encode(nil)
	i := bytes.LastIndex(enc, []byte{customBlobFiles, 1, 4})
	unknown := slices.Concat(enc[:i], []byte{8}, enc[i+1:])
	if err := d.Decode(unknown, "M", 0); !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), "unknown custom field 8") {
		t.Errorf("table with an unknown reference field: %v", err)
	}

	addition := func(num byte, tail ...byte) []byte {
		return append([]byte{0x90, 0x03, num, 1, 10, 20}, tail...)
	}
	table := func(refs ...byte) []byte {
		b := []byte{tagNewFile, 1, 5, 10}
		k := base.MakeInternalKey([]byte("k"), 1, base.KindSet).AppendEncoded(nil)
		b = append(append(append(b, byte(len(k))), k...), byte(len(k)))
		b = append(append(b, k...), 1, 1, customBlobFiles, byte(len(refs)))
		return append(append(b, refs...), customTerminate)
	}
	if err := d.Decode(addition(7, 0, 0, customSafeToIgnore|3, 1, 0xaa, customTerminate), "M", 0); err != nil ||
		len(d.NewBlobFiles) != 1 || d.NewBlobFiles[0].FileNum != 7 {
		t.Fatalf("an ignorable custom field in a blob addition: %+v, %v", d, err)
	}
	if err := d.Decode(table(3, 2), "M", 0); err != nil || !slices.Equal(d.NewFiles[0].Meta.BlobFiles, []base.FileNum{3, 5}) {
		t.Fatalf("references 3, 5: %+v, %v", d.NewFiles, err)
	}
	for name, bad := range map[string][]byte{
		"blob file 0":              addition(0, 0, 0, customTerminate),
		"value without method":     addition(7, 0, 2, 1, 2, customTerminate),
		"unknown mandatory field":  addition(7, 0, 0, 3, 1, 0xaa, customTerminate),
		"no terminator":            addition(7, 0, 0),
		"method past the end":      addition(7, 9, 'a'),
		"garbage in blob file 0":   {0x91, 0x03, 0, 1, 1, customTerminate},
		"garbage, no terminator":   {0x91, 0x03, 5, 1, 1},
		"garbage, truncated":       {0x91, 0x03, 5, 1},
		"deleting blob file 0":     {0x92, 0x03, 0},
		"deletion, truncated":      {0x92, 0x03},
		"empty references":         table(),
		"reference to blob file 0": table(0),
		"duplicate reference":      table(3, 0),
		"truncated reference":      table(3, 0x80),
		"references overflow":      table(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 1),
	} {
		if err := d.Decode(bad, "M", 0); !errors.Is(err, base.ErrCorruption) {
			t.Errorf("%s (% x): got %v, want corruption", name, bad, err)
		}
	}
}

// TestEditDecodeBeforeBlobFiles decodes an edit as shale encoded it before
// blob files existed (bytes taken from that version's encoder, with every
// field it knew): it decodes with no blob files and no references,
// re-encodes to the same bytes, and applies to a version without blob
// files.
func TestEditDecodeBeforeBlobFiles(t *testing.T) {
	const old = "1401011a6c6576656c64622e4279746577697365436f6d70617261746f720209031e04f40306010467031580400d6170706c6501070000000000000c70656172005a000000000000075a020128030105040101050580e2cfaa065409959a97ece39fe7cb17060101470290034802a8464901034a01014b014d57010c55010356016358013c018d01468c01010550"
	enc, err := hex.DecodeString(old)
	if err != nil {
		t.Fatal(err)
	}
	var d VersionEdit
	if err := d.Decode(enc, "MANIFEST-000001", 0); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if len(d.NewFiles) != 1 || d.NewFiles[0].Meta.FileNum != 21 || d.NewFiles[0].Meta.Secondary.Count != 12 {
		t.Fatalf("decoded %+v", d)
	}
	if d.NewBlobFiles != nil || d.BlobGarbage != nil || d.DeletedBlobFiles != nil || d.NewFiles[0].Meta.BlobFiles != nil {
		t.Fatalf("blob fields of an edit from before blob files: %+v", d)
	}
	if got := hex.EncodeToString(d.Encode(nil)); got != old {
		t.Fatalf("re-encoded as %s", got)
	}
	d.DeletedFiles, d.AddedSecondaryTombstones, d.RetiredSecondaryTombstones = nil, nil, nil
	v, err := Apply(base.DefaultComparer, 7, nil, &d)
	if err != nil || v.BlobFiles != nil || v.CheckOrdering(base.DefaultComparer.Compare) != nil {
		t.Fatalf("apply: %v, blob files %v", err, v.BlobFiles)
	}
}

// TestApplyBlobFiles checks the blob rules of Apply one by one.
func TestApplyBlobFiles(t *testing.T) {
	cmp := base.DefaultComparer
	blob := func(n base.FileNum, count, bytes uint64) *BlobFileMetadata {
		return &BlobFileMetadata{FileNum: n, TotalCount: count, TotalBytes: bytes, Size: bytes + 62}
	}
	v, err := Apply(cmp, 7, nil, &VersionEdit{
		NewBlobFiles: []*BlobFileMetadata{blob(5, 10, 1000), blob(3, 4, 400)},
		NewFiles:     []NewFileEntry{{Level: 0, Meta: blobTable(6, "a", 1, 3, 5)}, {Level: 0, Meta: blobTable(7, "b", 2, 5)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err = Apply(cmp, 7, v, &VersionEdit{BlobGarbage: []BlobGarbage{{FileNum: 5, Count: 2, Bytes: 300}}},
		&VersionEdit{BlobGarbage: []BlobGarbage{{FileNum: 5, Count: 1, Bytes: 100}}})
	if err != nil {
		t.Fatal(err)
	}
	const shape = "L0:\n  000007:[b#2,SET-b#2,SET] blobs=000005\n  000006:[a#1,SET-a#1,SET] blobs=000003,000005\n" +
		"blob files:\n  000003:4/400\n  000005:10/1000(garbage 3/400)\n"
	if v.String() != shape {
		t.Fatalf("version\n%s\nwant\n%s", v, shape)
	}
	if n, total, garbage := v.BlobStats(); n != 2 || total != 1400 || garbage != 400 || v.BlobFile(5).LiveBytes() != 600 {
		t.Fatalf("stats %d %d %d", n, total, garbage)
	}
	if got := v.TablesReferencingBlob(3); len(got) != 1 || got[0].Meta.FileNum != 6 || got[0].Level != 0 {
		t.Fatalf("tables referencing 000003: %v", got)
	}
	if got := v.UnreferencedBlobFiles(&VersionEdit{}); got != nil {
		t.Fatalf("unreferenced with every table present: %v", got)
	}
	del6 := &VersionEdit{DeletedFiles: map[DeletedFileEntry]bool{{Level: 0, FileNum: 6}: true}}
	if got := fmt.Sprint(v.UnreferencedBlobFiles(del6)); got != "[000003]" {
		t.Fatalf("unreferenced once 000006 is gone: %s", got)
	}
	// A table moved to L1 (deleted and added back) keeps its references.
	move6 := &VersionEdit{DeletedFiles: del6.DeletedFiles, NewFiles: []NewFileEntry{{Level: 1, Meta: blobTable(6, "a", 1, 3, 5)}}}
	if got := v.UnreferencedBlobFiles(move6); got != nil {
		t.Fatalf("unreferenced after a move: %v", got)
	}
	both := &VersionEdit{DeletedFiles: map[DeletedFileEntry]bool{{Level: 0, FileNum: 6}: true, {Level: 0, FileNum: 7}: true},
		NewBlobFiles: []*BlobFileMetadata{blob(9, 1, 1)}, DeletedBlobFiles: []base.FileNum{3}}
	if got := fmt.Sprint(v.UnreferencedBlobFiles(both)); got != "[000005]" {
		t.Fatalf("unreferenced with every table gone, 000003 deleted and 000009 new: %s", got)
	}
	both.DeletedBlobFiles = append(both.DeletedBlobFiles, v.UnreferencedBlobFiles(both)...)
	empty, err := Apply(cmp, 7, v, both)
	if err != nil || len(empty.BlobFiles) != 1 || empty.BlobFiles[0].FileNum != 9 {
		t.Fatalf("deleting the unreferenced blob files: %v, %v", err, empty)
	}
	if v.BlobFile(5).GarbageCount != 3 || v.BlobFile(3) == nil {
		t.Fatal("Apply changed its base version")
	}

	for name, e := range map[string]*VersionEdit{
		"duplicate addition":          {NewBlobFiles: []*BlobFileMetadata{blob(3, 1, 1)}},
		"duplicate in one edit":       {NewBlobFiles: []*BlobFileMetadata{blob(8, 1, 1), blob(8, 1, 1)}},
		"blob file 0":                 {NewBlobFiles: []*BlobFileMetadata{blob(0, 1, 1)}},
		"addition with garbage":       {NewBlobFiles: []*BlobFileMetadata{{FileNum: 8, TotalCount: 2, TotalBytes: 2, GarbageCount: 1}}},
		"garbage in an unknown file":  {BlobGarbage: []BlobGarbage{{FileNum: 4, Count: 1, Bytes: 1}}},
		"garbage past the count":      {BlobGarbage: []BlobGarbage{{FileNum: 5, Count: 8, Bytes: 1}}},
		"garbage past the bytes":      {BlobGarbage: []BlobGarbage{{FileNum: 5, Count: 1, Bytes: 601}}},
		"garbage overflowing":         {BlobGarbage: []BlobGarbage{{FileNum: 5, Count: math.MaxUint64, Bytes: 1}}},
		"deleting an unknown file":    {DeletedBlobFiles: []base.FileNum{4}},
		"deleting a file twice":       {DeletedFiles: both.DeletedFiles, DeletedBlobFiles: []base.FileNum{3, 3}},
		"deleting a referenced file":  {DeletedBlobFiles: []base.FileNum{3}},
		"table referencing unknown":   {NewFiles: []NewFileEntry{{Level: 0, Meta: blobTable(8, "c", 3, 4)}}},
		"table referencing deleted":   {NewFiles: []NewFileEntry{{Level: 0, Meta: blobTable(8, "c", 3, 3)}}, DeletedFiles: del6.DeletedFiles, DeletedBlobFiles: []base.FileNum{3}},
		"references out of order":     {NewFiles: []NewFileEntry{{Level: 0, Meta: blobTable(8, "c", 3, 5, 3)}}},
		"garbage before its addition": {BlobGarbage: []BlobGarbage{{FileNum: 8, Count: 1, Bytes: 1}}},
	} {
		if _, err := Apply(cmp, 7, v, e); err == nil {
			t.Errorf("%s: Apply succeeded", name)
		}
	}
	// The same edit, one record after another: garbage of a file added by
	// the same edit, then its deletion.
	if w, err := Apply(cmp, 7, v, &VersionEdit{NewBlobFiles: []*BlobFileMetadata{blob(8, 2, 20)},
		BlobGarbage: []BlobGarbage{{FileNum: 8, Count: 2, Bytes: 20}}, DeletedBlobFiles: []base.FileNum{8}}); err != nil || w.BlobFile(8) != nil {
		t.Fatalf("add, garbage and delete in one edit: %v", err)
	}
	// CheckOrdering finds what Apply prevents.
	bad := &Version{Levels: make([][]*FileMetadata, 7), BlobFiles: []*BlobFileMetadata{blob(5, 1, 1)}}
	bad.Levels[0] = []*FileMetadata{blobTable(6, "a", 1, 4)}
	if err := bad.CheckOrdering(cmp.Compare); err == nil || !strings.Contains(err.Error(), "references blob file 000004") {
		t.Fatalf("CheckOrdering on a dangling reference: %v", err)
	}
	bad.Levels[0] = nil
	bad.BlobFiles = []*BlobFileMetadata{blob(5, 1, 1), blob(5, 1, 1)}
	if err := bad.CheckOrdering(cmp.Compare); err == nil {
		t.Fatal("CheckOrdering accepted duplicate blob files")
	}
	bad.BlobFiles = []*BlobFileMetadata{{FileNum: 5, TotalCount: 1, GarbageCount: 2}}
	if err := bad.CheckOrdering(cmp.Compare); err == nil {
		t.Fatal("CheckOrdering accepted garbage past the total")
	}
}

// blobModel is the reference model of TestApplyBlobFilesRandom: the blob
// files with their totals and garbage, and the tables with their
// references.
type blobModel struct {
	blobs  map[base.FileNum]BlobFileMetadata
	tables map[base.FileNum][]base.FileNum
}

func (m blobModel) clone() blobModel {
	c := blobModel{blobs: make(map[base.FileNum]BlobFileMetadata), tables: make(map[base.FileNum][]base.FileNum)}
	for k, v := range m.blobs {
		c.blobs[k] = v
	}
	for k, v := range m.tables {
		c.tables[k] = v
	}
	return c
}

func (m blobModel) unreferenced() []base.FileNum {
	var out []base.FileNum
	for n := range m.blobs {
		referenced := false
		for _, refs := range m.tables {
			referenced = referenced || slices.Contains(refs, n)
		}
		if !referenced {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// TestApplyBlobFilesRandom applies random edits of tables and blob files,
// valid and not, to a version and to blobModel, and compares Apply's
// verdict, the blob files and their garbage, the tables referencing each
// and UnreferencedBlobFiles with the model's. At the end the accepted edits,
// encoded as a MANIFEST, replay to the same version.
func TestApplyBlobFilesRandom(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 5))
	cmp := base.DefaultComparer
	model := blobModel{blobs: map[base.FileNum]BlobFileMetadata{}, tables: map[base.FileNum][]base.FileNum{}}
	var v *Version
	var accepted []*VersionEdit
	nextNum := base.FileNum(1)
	pick := func(m map[base.FileNum]BlobFileMetadata) base.FileNum {
		// A live blob file most of the time, else any number seen.
		if len(m) > 0 && rng.IntN(6) != 0 {
			nums := make([]base.FileNum, 0, len(m))
			for n := range m {
				nums = append(nums, n)
			}
			slices.Sort(nums)
			return nums[rng.IntN(len(nums))]
		}
		return base.FileNum(1 + rng.IntN(int(nextNum)))
	}
	for step := range 3000 {
		e := &VersionEdit{}
		next := model.clone()
		ok := true
		// Tables: delete some, add some with references.
		for n := range model.tables {
			if rng.IntN(4) == 0 {
				if e.DeletedFiles == nil {
					e.DeletedFiles = map[DeletedFileEntry]bool{}
				}
				e.DeletedFiles[DeletedFileEntry{Level: 0, FileNum: n}] = true
				delete(next.tables, n)
			}
		}
		// Blob additions first in the model, so that a table can
		// reference a blob file its own edit adds.
		for range rng.IntN(3) {
			num := nextNum
			if rng.IntN(8) == 0 && nextNum > 1 {
				num = base.FileNum(1 + rng.IntN(int(nextNum-1))) // maybe a duplicate
			} else {
				nextNum++
			}
			b := BlobFileMetadata{FileNum: num, TotalCount: 1 + rng.Uint64N(20), Size: 1 << 20}
			b.TotalBytes = b.TotalCount * (1 + rng.Uint64N(1000))
			e.NewBlobFiles = append(e.NewBlobFiles, &b)
			if _, dup := next.blobs[num]; dup {
				ok = false
			}
			next.blobs[num] = b
		}
		for range rng.IntN(3) {
			var refs []base.FileNum
			for range rng.IntN(4) {
				refs = append(refs, pick(next.blobs))
			}
			slices.Sort(refs)
			refs = slices.Compact(refs)
			num := nextNum
			nextNum++
			e.NewFiles = append(e.NewFiles, NewFileEntry{Level: 0, Meta: blobTable(num, "k", base.SeqNum(num), refs...)})
			next.tables[num] = refs
		}
		for range rng.IntN(3) {
			num := pick(next.blobs)
			cur, live := next.blobs[num]
			g := BlobGarbage{FileNum: num}
			if rng.IntN(2) == 0 {
				g.Time = 1 + rng.Uint64N(100)
			}
			if live {
				// Up to what is left, sometimes one more (an earlier
				// record of this edit may have exceeded it already).
				left := func(total, garbage uint64) uint64 { return total - min(total, garbage) }
				g.Count = rng.Uint64N(left(cur.TotalCount, cur.GarbageCount) + 1 + uint64(rng.IntN(2)))
				g.Bytes = rng.Uint64N(left(cur.TotalBytes, cur.GarbageBytes) + 1 + uint64(rng.IntN(2)))
				cur.GarbageCount += g.Count
				cur.GarbageBytes += g.Bytes
				if (g.Count != 0 || g.Bytes != 0) && g.Time != 0 && (cur.OldestGarbageTime == 0 || g.Time < cur.OldestGarbageTime) {
					cur.OldestGarbageTime = g.Time
				}
				if cur.GarbageCount > cur.TotalCount || cur.GarbageBytes > cur.TotalBytes {
					ok = false
				}
				next.blobs[num] = cur
			} else {
				g.Count, g.Bytes = 1, 1
				ok = false
			}
			e.BlobGarbage = append(e.BlobGarbage, g)
		}
		// Deletions: mostly what the version says the edit may delete,
		// sometimes any number (unknown, or still referenced).
		if v != nil && rng.IntN(2) == 0 {
			e.DeletedBlobFiles = v.UnreferencedBlobFiles(e)
		}
		if rng.IntN(5) == 0 {
			e.DeletedBlobFiles = append(e.DeletedBlobFiles, pick(next.blobs))
		}
		for _, num := range e.DeletedBlobFiles {
			if _, live := next.blobs[num]; !live {
				ok = false
			}
			delete(next.blobs, num)
		}
		for _, refs := range next.tables {
			for _, n := range refs {
				if _, live := next.blobs[n]; !live {
					ok = false
				}
			}
		}

		nv, err := Apply(cmp, 7, v, e)
		if (err == nil) != ok {
			t.Fatalf("seed %d step %d: Apply error %v, model says ok=%v\nversion:\n%s", seed, step, err, ok, v)
		}
		if err != nil {
			continue
		}
		if err := nv.CheckOrdering(cmp.Compare); err != nil {
			t.Fatalf("seed %d step %d: %v", seed, step, err)
		}
		v, model = nv, next
		accepted = append(accepted, e)
		checkBlobModel(t, fmt.Sprintf("seed %d step %d", seed, step), v, model)
	}

	// Replay the accepted edits, encoded, as a MANIFEST.
	var buf bytes.Buffer
	w := record.NewWriter(&buf)
	first := &VersionEdit{ManifestFormat: ManifestFormatV1, ComparerName: cmp.Name, HasNextFileNumber: true, NextFileNumber: 1}
	for _, e := range append([]*VersionEdit{first}, accepted...) {
		if _, err := w.WriteRecord(e.Encode(nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	res, err := Replay(&buf, "MANIFEST-000001", cmp, 7)
	if err != nil {
		t.Fatalf("seed %d: replay: %v", seed, err)
	}
	if res.Version.String() != v.String() || !reflect.DeepEqual(res.Version.BlobFiles, v.BlobFiles) {
		t.Fatalf("seed %d: replayed\n%s\napplied\n%s", seed, res.Version, v)
	}
	if len(v.BlobFiles) > 0 && res.MaxFileNum < v.BlobFiles[len(v.BlobFiles)-1].FileNum {
		t.Fatalf("seed %d: replay's largest file number %s is below blob file %s", seed, res.MaxFileNum, v.BlobFiles[len(v.BlobFiles)-1].FileNum)
	}
	checkBlobModel(t, fmt.Sprintf("seed %d replayed", seed), res.Version, model)
}

func checkBlobModel(t *testing.T, where string, v *Version, model blobModel) {
	t.Helper()
	if len(v.BlobFiles) != len(model.blobs) {
		t.Fatalf("%s: %d blob files, model %d", where, len(v.BlobFiles), len(model.blobs))
	}
	for _, b := range v.BlobFiles {
		if mb, ok := model.blobs[b.FileNum]; !ok || mb.TotalCount != b.TotalCount || mb.TotalBytes != b.TotalBytes ||
			mb.GarbageCount != b.GarbageCount || mb.GarbageBytes != b.GarbageBytes || mb.OldestGarbageTime != b.OldestGarbageTime {
			t.Fatalf("%s: blob file %s, model %+v", where, b, mb)
		}
		var got, want []base.FileNum
		for _, lf := range v.TablesReferencingBlob(b.FileNum) {
			got = append(got, lf.Meta.FileNum)
		}
		for n, refs := range model.tables {
			if slices.Contains(refs, b.FileNum) {
				want = append(want, n)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: tables referencing %s: %v, model %v", where, b.FileNum, got, want)
		}
	}
	if got, want := v.UnreferencedBlobFiles(&VersionEdit{}), model.unreferenced(); !slices.Equal(got, want) {
		t.Fatalf("%s: unreferenced blob files %v, model %v", where, got, want)
	}
}

// TestVersionSetObsoleteBlobFiles checks that a deleted blob file becomes
// obsolete only once no referenced version holds it, is handed out once,
// and that blob files and their garbage survive Load (through the snapshot
// of the new MANIFEST) with the next file number above them.
func TestVersionSetObsoleteBlobFiles(t *testing.T) {
	o := testOptions(t)
	vs, err := Create(o)
	if err != nil {
		t.Fatal(err)
	}
	blobA, blobB, table := vs.NewFileNum(), vs.NewFileNum(), vs.NewFileNum()
	if err := vs.LogAndApply(&VersionEdit{
		NewBlobFiles: []*BlobFileMetadata{{FileNum: blobA, TotalCount: 4, TotalBytes: 400, Size: 500, ChecksumMethod: "crc32c", ChecksumValue: []byte{9, 8, 7, 6}},
			{FileNum: blobB, TotalCount: 2, TotalBytes: 200, Size: 300}},
		NewFiles: []NewFileEntry{{Level: 0, Meta: blobTable(table, "a", 1, blobA, blobB)}},
	}); err != nil {
		t.Fatal(err)
	}
	reader := vs.Current() // pins the version holding blobA
	// A compaction rewrites the table, relocating blobA's values into
	// blobC, and deletes what no table references any more.
	blobC, out := vs.NewFileNum(), vs.NewFileNum()
	e := &VersionEdit{
		DeletedFiles: map[DeletedFileEntry]bool{{Level: 0, FileNum: table}: true},
		NewFiles:     []NewFileEntry{{Level: 1, Meta: blobTable(out, "a", 1, blobB, blobC)}},
		NewBlobFiles: []*BlobFileMetadata{{FileNum: blobC, TotalCount: 3, TotalBytes: 300, Size: 400}},
		BlobGarbage:  []BlobGarbage{{FileNum: blobA, Count: 4, Bytes: 400}, {FileNum: blobB, Count: 1, Bytes: 50, Time: 1234}},
	}
	cur := vs.Current()
	e.DeletedBlobFiles = cur.UnreferencedBlobFiles(e)
	cur.Unref()
	if !slices.Equal(e.DeletedBlobFiles, []base.FileNum{blobA}) {
		t.Fatalf("unreferenced %v, want [%s]", e.DeletedBlobFiles, blobA)
	}
	if err := vs.LogAndApply(e); err != nil {
		t.Fatal(err)
	}
	if got := vs.TakeObsoleteBlobFiles(); len(got) != 0 {
		t.Fatalf("obsolete while a reader pins it: %v", got)
	}
	if _, ok := vs.LiveBlobFileNums()[blobA]; !ok {
		t.Fatal("pinned blob file not live")
	}
	reader.Unref()
	if got := vs.TakeObsoleteBlobFiles(); len(got) != 1 || got[0].FileNum != blobA {
		t.Fatalf("obsolete %v, want [%s]", got, blobA)
	}
	if got := vs.TakeObsoleteBlobFiles(); len(got) != 0 {
		t.Fatalf("obsolete reported twice: %v", got)
	}
	if got := sortedNums(vs.LiveBlobFileNums()); !slices.Equal(got, []base.FileNum{blobB, blobC}) {
		t.Fatalf("live blob files %v", got)
	}
	if got := vs.TakeObsoleteTables(); len(got) != 1 || got[0].FileNum != table {
		t.Fatalf("obsolete tables %v", got)
	}
	before := currentString(vs)
	if err := vs.Close(); err != nil {
		t.Fatal(err)
	}

	vs2, err := Load(o)
	if err != nil {
		t.Fatal(err)
	}
	defer vs2.Close()
	if got := currentString(vs2); got != before {
		t.Fatalf("loaded\n%s\nwant\n%s", got, before)
	}
	if !strings.Contains(before, "000003:2/200(garbage 1/50 dated 1970-01-01T00:00:00.000001234Z)") {
		t.Fatalf("garbage missing from\n%s", before)
	}
	if n := vs2.NewFileNum(); n <= out {
		t.Fatalf("next file number %s after Load, below %s", n, out)
	}
	if got := sortedNums(vs2.LiveBlobFileNums()); !slices.Equal(got, []base.FileNum{blobB, blobC}) {
		t.Fatalf("live blob files after Load %v", got)
	}
}

// TestVersionTablesOnlyPinsNoBlobFiles: a version from TablesOnly keeps the
// tables of the version it was made from live, but not its blob files: a
// blob file an edit deletes meanwhile is obsolete at once, while the table
// the edit deletes stays live until the version is released.
func TestVersionTablesOnlyPinsNoBlobFiles(t *testing.T) {
	o := testOptions(t)
	vs, err := Create(o)
	if err != nil {
		t.Fatal(err)
	}
	blobA, table := vs.NewFileNum(), vs.NewFileNum()
	if err := vs.LogAndApply(&VersionEdit{
		NewBlobFiles: []*BlobFileMetadata{{FileNum: blobA, TotalCount: 4, TotalBytes: 400, Size: 500}},
		NewFiles:     []NewFileEntry{{Level: 0, Meta: blobTable(table, "a", 1, blobA)}},
	}); err != nil {
		t.Fatal(err)
	}
	cur := vs.Current()
	flush := cur.TablesOnly() // what a flush holds
	cur.Unref()
	if len(flush.BlobFiles) != 0 || len(flush.Levels[0]) != 1 || flush.Levels[0][0].FileNum != table {
		t.Fatalf("TablesOnly: levels %v, blob files %v", flush.Levels, flush.BlobFiles)
	}
	// A compaction rewrites the table without blob references: blobA is
	// unreferenced and deleted with the edit.
	out := vs.NewFileNum()
	e := &VersionEdit{
		DeletedFiles: map[DeletedFileEntry]bool{{Level: 0, FileNum: table}: true},
		NewFiles:     []NewFileEntry{{Level: 1, Meta: blobTable(out, "a", 1)}},
		BlobGarbage:  []BlobGarbage{{FileNum: blobA, Count: 4, Bytes: 400}},
	}
	cur = vs.Current()
	e.DeletedBlobFiles = cur.UnreferencedBlobFiles(e)
	cur.Unref()
	if err := vs.LogAndApply(e); err != nil {
		t.Fatal(err)
	}
	if got := vs.TakeObsoleteBlobFiles(); len(got) != 1 || got[0].FileNum != blobA {
		t.Fatalf("obsolete blob files %v while only a tables-only version is held, want [%s]", got, blobA)
	}
	if got := vs.TakeObsoleteTables(); len(got) != 0 {
		t.Fatalf("obsolete tables %v while the tables-only version holds them", got)
	}
	flush.Unref()
	if got := vs.TakeObsoleteTables(); len(got) != 1 || got[0].FileNum != table {
		t.Fatalf("obsolete tables %v after the release, want [%s]", got, table)
	}
	// Closed, so that the MANIFEST can be removed with the directory
	// (Windows removes no open file).
	if err := vs.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestVersionWithBlobFilesOfPinsOnlyTheirBlobFiles: a version from
// WithBlobFilesOf (what a compaction holds) keeps every table of the
// version it was made from and the blob files its tables reference, but a
// blob file only other tables reference goes as soon as an edit deletes it.
func TestVersionWithBlobFilesOfPinsOnlyTheirBlobFiles(t *testing.T) {
	o := testOptions(t)
	vs, err := Create(o)
	if err != nil {
		t.Fatal(err)
	}
	blobA, blobB, tableA, tableB := vs.NewFileNum(), vs.NewFileNum(), vs.NewFileNum(), vs.NewFileNum()
	if err := vs.LogAndApply(&VersionEdit{
		NewBlobFiles: []*BlobFileMetadata{{FileNum: blobA, TotalCount: 4, TotalBytes: 400, Size: 500},
			{FileNum: blobB, TotalCount: 4, TotalBytes: 400, Size: 500}},
		NewFiles: []NewFileEntry{{Level: 0, Meta: blobTable(tableA, "a", 1, blobA)},
			{Level: 0, Meta: blobTable(tableB, "b", 2, blobB)}},
	}); err != nil {
		t.Fatal(err)
	}
	cur := vs.Current()
	job := cur.WithBlobFilesOf([]*FileMetadata{cur.Levels[0][1]}) // tableA (L0 is newest first)
	cur.Unref()
	if len(job.BlobFiles) != 1 || job.BlobFiles[0].FileNum != blobA || len(job.Levels[0]) != 2 {
		t.Fatalf("WithBlobFilesOf(tableA): levels %v, blob files %v", job.Levels, job.BlobFiles)
	}
	// Another job rewrites tableB without blob references: blobB goes
	// with the edit; blobA, which the job may read, does not.
	out := vs.NewFileNum()
	e := &VersionEdit{
		DeletedFiles: map[DeletedFileEntry]bool{{Level: 0, FileNum: tableB}: true},
		NewFiles:     []NewFileEntry{{Level: 1, Meta: blobTable(out, "b", 2)}},
		BlobGarbage:  []BlobGarbage{{FileNum: blobB, Count: 4, Bytes: 400}},
	}
	cur = vs.Current()
	e.DeletedBlobFiles = cur.UnreferencedBlobFiles(e)
	cur.Unref()
	if !slices.Equal(e.DeletedBlobFiles, []base.FileNum{blobB}) {
		t.Fatalf("unreferenced %v, want [%s]", e.DeletedBlobFiles, blobB)
	}
	if err := vs.LogAndApply(e); err != nil {
		t.Fatal(err)
	}
	if got := vs.TakeObsoleteBlobFiles(); len(got) != 1 || got[0].FileNum != blobB {
		t.Fatalf("obsolete blob files %v while the job holds only blobA, want [%s]", got, blobB)
	}
	if got := vs.TakeObsoleteTables(); len(got) != 0 {
		t.Fatalf("obsolete tables %v while the job's version holds them", got)
	}
	if _, ok := vs.LiveBlobFileNums()[blobA]; !ok {
		t.Fatal("the job's blob file is not live")
	}
	job.Unref()
	if got := vs.TakeObsoleteTables(); len(got) != 1 || got[0].FileNum != tableB {
		t.Fatalf("obsolete tables %v after the release, want [%s]", got, tableB)
	}
	if err := vs.Close(); err != nil {
		t.Fatal(err)
	}
}
