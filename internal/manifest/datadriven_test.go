package manifest

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/shaledb/shale/internal/base"
)

var kindByName = map[string]base.Kind{
	"DEL": base.KindDelete, "SET": base.KindSet, "MERGE": base.KindMerge,
	"SINGLEDEL": base.KindSingleDelete, "RANGEDEL": base.KindRangeDelete,
	"BLOBINDEX": base.KindBlobIndex,
}

// parseKey parses "key#seq,KIND" as printed by formatKey ("inf" is
// SeqNumMax).
func parseKey(s string) (base.InternalKey, error) {
	uk, rest, ok := strings.Cut(s, "#")
	if !ok {
		return base.InternalKey{}, fmt.Errorf("key %q: want key#seq,KIND", s)
	}
	seqStr, kindStr, ok := strings.Cut(rest, ",")
	if !ok {
		return base.InternalKey{}, fmt.Errorf("key %q: want key#seq,KIND", s)
	}
	seq := base.SeqNumMax
	if seqStr != "inf" {
		n, err := strconv.ParseUint(seqStr, 10, 64)
		if err != nil {
			return base.InternalKey{}, err
		}
		seq = base.SeqNum(n)
	}
	kind, ok := kindByName[kindStr]
	if !ok {
		return base.InternalKey{}, fmt.Errorf("unknown kind %q", kindStr)
	}
	return base.MakeInternalKey([]byte(uk), seq, kind), nil
}

// parseFile parses "<level> <filenum> <smallest> <largest> [size=N]
// [seqs=a-b] [blobs=n,m...]". The seqnum range is the keys' seqnums
// (ignoring sentinels) unless seqs=a-b; blobs are the blob files the table
// references.
func parseFile(fields []string) (int, *FileMetadata, error) {
	if len(fields) < 4 {
		return 0, nil, fmt.Errorf("want: level filenum smallest largest [size=N] [seqs=a-b]")
	}
	level, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0, nil, err
	}
	num, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		return 0, nil, err
	}
	m := &FileMetadata{FileNum: base.FileNum(num), Size: 1}
	if m.Smallest, err = parseKey(fields[2]); err != nil {
		return 0, nil, err
	}
	if m.Largest, err = parseKey(fields[3]); err != nil {
		return 0, nil, err
	}
	m.SmallestSeq, m.LargestSeq = base.SeqNumMax, 0
	for _, k := range []base.InternalKey{m.Smallest, m.Largest} {
		if k.SeqNum() != base.SeqNumMax {
			m.SmallestSeq, m.LargestSeq = min(m.SmallestSeq, k.SeqNum()), max(m.LargestSeq, k.SeqNum())
		}
	}
	if m.SmallestSeq > m.LargestSeq {
		m.SmallestSeq, m.LargestSeq = 0, 0
	}
	for _, f := range fields[4:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "size":
			if m.Size, err = strconv.ParseUint(v, 10, 64); err != nil {
				return 0, nil, err
			}
		case "seqs":
			a, b, _ := strings.Cut(v, "-")
			x, err1 := strconv.ParseUint(a, 10, 64)
			y, err2 := strconv.ParseUint(b, 10, 64)
			if err1 != nil || err2 != nil {
				return 0, nil, fmt.Errorf("bad seqs %q", v)
			}
			m.SmallestSeq, m.LargestSeq = base.SeqNum(x), base.SeqNum(y)
		case "blobs":
			for _, n := range strings.Split(v, ",") {
				x, err := strconv.ParseUint(n, 10, 64)
				if err != nil {
					return 0, nil, fmt.Errorf("bad blobs %q", v)
				}
				m.BlobFiles = append(m.BlobFiles, base.FileNum(x))
			}
		default:
			return 0, nil, fmt.Errorf("unknown argument %q", f)
		}
	}
	return level, m, nil
}

// parseEdits parses lines of "edit" (starts a new edit), "add <file>",
// "del <level> <filenum>", "add-blob <num> <blobs> <bytes>", "garbage <num>
// <blobs> <bytes>" and "del-blob <num>".
func parseEdits(input string) ([]*VersionEdit, error) {
	var edits []*VersionEdit
	cur := func() *VersionEdit {
		if len(edits) == 0 {
			edits = append(edits, &VersionEdit{})
		}
		return edits[len(edits)-1]
	}
	for _, line := range strings.Split(input, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "edit":
			edits = append(edits, &VersionEdit{})
		case "add":
			level, m, err := parseFile(fields[1:])
			if err != nil {
				return nil, err
			}
			e := cur()
			e.NewFiles = append(e.NewFiles, NewFileEntry{Level: level, Meta: m})
		case "del":
			if len(fields) != 3 {
				return nil, fmt.Errorf("want: del level filenum")
			}
			level, err1 := strconv.Atoi(fields[1])
			num, err2 := strconv.ParseUint(fields[2], 10, 64)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("bad del line %q", line)
			}
			e := cur()
			if e.DeletedFiles == nil {
				e.DeletedFiles = map[DeletedFileEntry]bool{}
			}
			e.DeletedFiles[DeletedFileEntry{Level: level, FileNum: base.FileNum(num)}] = true
		case "add-blob", "garbage", "del-blob":
			var nums []uint64
			for _, f := range fields[1:] {
				n, err := strconv.ParseUint(f, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("bad %s line %q", fields[0], line)
				}
				nums = append(nums, n)
			}
			want := map[string]int{"add-blob": 3, "garbage": 3, "del-blob": 1}[fields[0]]
			if len(nums) != want {
				return nil, fmt.Errorf("%s takes %d numbers: %q", fields[0], want, line)
			}
			e := cur()
			switch fields[0] {
			case "add-blob":
				e.NewBlobFiles = append(e.NewBlobFiles, &BlobFileMetadata{FileNum: base.FileNum(nums[0]),
					TotalCount: nums[1], TotalBytes: nums[2], Size: nums[2] + 62})
			case "garbage":
				e.BlobGarbage = append(e.BlobGarbage, BlobGarbage{FileNum: base.FileNum(nums[0]), Count: nums[1], Bytes: nums[2]})
			case "del-blob":
				e.DeletedBlobFiles = append(e.DeletedBlobFiles, base.FileNum(nums[0]))
			}
		default:
			return nil, fmt.Errorf("unknown line %q", line)
		}
	}
	return edits, nil
}

func optKey(t *testing.T, td *datadriven.TestData, name string) []byte {
	if !td.HasArg(name) {
		return nil
	}
	var s string
	td.ScanArgs(t, name, &s)
	return []byte(s)
}

func fileNums(files []*FileMetadata) string {
	if len(files) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, f := range files {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f.FileNum.String())
	}
	return b.String()
}

func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.HasPrefix(filepath.ToSlash(path), "testdata/fuzz/") {
			return // go test -fuzz's seed corpora, not scripts
		}
		numLevels := 7
		var v *Version
		cmp := base.DefaultComparer
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			switch td.Cmd {
			case "reset":
				v = nil
				return ""
			case "apply":
				edits, err := parseEdits(td.Input)
				if err != nil {
					td.Fatalf(t, "%v", err)
				}
				nv, err := Apply(cmp, numLevels, v, edits...)
				if err != nil {
					return "error: " + err.Error()
				}
				if err := nv.CheckOrdering(cmp.Compare); err != nil {
					t.Fatalf("Apply produced a version that fails CheckOrdering: %v", err)
				}
				v = nv
				return v.String()
			case "define":
				// Builds a version as given, without Apply's checks.
				v = &Version{Levels: make([][]*FileMetadata, numLevels)}
				for _, line := range strings.Split(td.Input, "\n") {
					if fields := strings.Fields(line); len(fields) > 0 {
						level, m, err := parseFile(fields)
						if err != nil {
							td.Fatalf(t, "%v", err)
						}
						v.Levels[level] = append(v.Levels[level], m)
					}
				}
				return v.String()
			case "unreferenced-blobs":
				// The blob files the (single) edit of the input may delete.
				edits, err := parseEdits(td.Input)
				if err != nil {
					td.Fatalf(t, "%v", err)
				}
				e := &VersionEdit{}
				if len(edits) > 0 {
					e = edits[0]
				}
				if got := v.UnreferencedBlobFiles(e); len(got) > 0 {
					return formatFileNums(got)
				}
				return "none"
			case "check":
				if err := v.CheckOrdering(cmp.Compare); err != nil {
					return "error: " + err.Error()
				}
				return "ok"
			case "overlaps":
				var level int
				td.ScanArgs(t, "level", &level)
				return fileNums(v.Overlaps(cmp.Compare, level, optKey(t, td, "start"), optKey(t, td, "end")))
			case "overlaps-l0-expanded":
				return fileNums(v.OverlapsL0Expanded(cmp.Compare, optKey(t, td, "start"), optKey(t, td, "end")))
			case "find":
				var level int
				td.ScanArgs(t, "level", &level)
				var out []string
				for _, k := range strings.Fields(td.Input) {
					f := v.FindFile(cmp.Compare, level, []byte(k))
					if f == nil {
						out = append(out, k+": none")
					} else {
						out = append(out, k+": "+f.FileNum.String())
					}
				}
				return strings.Join(out, "\n")
			case "sizes":
				var b bytes.Buffer
				for l := range v.NumLevels() {
					if v.NumFiles(l) > 0 {
						fmt.Fprintf(&b, "L%d: %d files, %d bytes\n", l, v.NumFiles(l), v.LevelSize(l))
					}
				}
				return b.String()
			}
			td.Fatalf(t, "unknown command %q", td.Cmd)
			return ""
		})
	})
}
