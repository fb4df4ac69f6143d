package manifest

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/base"
)

// TestReplayTail: Replay returns the version and counters of every record;
// it drops a torn last record and says where it began and how long it
// was; it refuses a damaged last record, describing the records before it;
// and it refuses damage followed by intact records with no version at all.
func TestReplayTail(t *testing.T) {
	const n = 5
	o, path, shapes := buildDB(t, n)
	data := readFile(t, o.FS, path)
	name := o.FS.PathBase(path)
	last := int64(lastRecordOffset(t, data))
	replay := func(data []byte) (ReplayResult, error) {
		return Replay(bytes.NewReader(data), name, base.DefaultComparer, 7)
	}

	// The snapshot Create wrote, then one edit per table.
	res, err := replay(data)
	if err != nil || res.Records != n+1 || res.TornBytes != 0 || res.Version.String() != shapes[n-1] {
		t.Fatalf("intact: %+v, %v", res, err)
	}
	if res.MaxFileNum == 0 || res.NextFileNum <= res.MaxFileNum {
		t.Fatalf("intact: next file number %s, largest table %s", res.NextFileNum, res.MaxFileNum)
	}

	torn := data[:len(data)-3]
	res, err = replay(torn)
	if err != nil || res.Records != n || res.TornOffset != last || res.TornBytes != int64(len(torn))-last || res.Version.String() != shapes[n-2] {
		t.Fatalf("torn last record at %d: %+v, %v", last, res, err)
	}

	damaged := slices.Clone(data)
	damaged[len(damaged)-2] ^= 0x10
	res, err = replay(damaged)
	var ce *base.CorruptionError
	if !errors.As(err, &ce) || ce.File != name || ce.Offset != last {
		t.Fatalf("damaged last record at %d: %v, want corruption naming %s at that offset", last, err, name)
	}
	if res.Records != n || res.Version == nil || res.Version.String() != shapes[n-2] || res.TornBytes != 0 {
		t.Fatalf("damaged last record: %+v; want the %d records before it", res, n)
	}

	middle := slices.Clone(data)
	middle[len(middle)/2] ^= 0x40
	if res, err := replay(middle); !errors.Is(err, base.ErrCorruption) || res.Version != nil || res.Records != 0 {
		t.Fatalf("damage in the middle: %+v, %v", res, err)
	}
	if _, err := Replay(bytes.NewReader(data), name, &base.Comparer{Name: "other", Compare: bytes.Compare}, 7); !errors.Is(err, base.ErrInvalidArgument) {
		t.Fatalf("another comparer: %v", err)
	}
}

func TestParseCurrent(t *testing.T) {
	for _, tc := range []struct {
		data string
		want base.FileNum // 0: corruption
	}{
		{"MANIFEST-000007\n", 7},
		{"MANIFEST-1234567\n", 1234567},
		{"MANIFEST-000007", 0},
		{"MANIFEST-000007\n\n", 0},
		{"MANIFEST-000007\nx", 0},
		{"MANIFEST-7\n", 0},
		{"000007.log\n", 0},
		{"", 0},
	} {
		num, err := ParseCurrent([]byte(tc.data), "CURRENT")
		var ce *base.CorruptionError
		switch {
		case tc.want != 0 && (err != nil || num != tc.want):
			t.Errorf("%q: %s, %v; want %s", tc.data, num, err, tc.want)
		case tc.want == 0 && (!errors.As(err, &ce) || ce.File != "CURRENT"):
			t.Errorf("%q: %s, %v; want corruption naming CURRENT", tc.data, num, err)
		}
	}
}
