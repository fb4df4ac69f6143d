package sstable

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/testdir"
)

// numAttr reads a value as a decimal attribute.
func numAttr(_, value []byte) (uint64, bool) {
	n, err := strconv.ParseUint(string(value), 10, 64)
	return n, err == nil
}

// TestBlockPropsSkipBlocks writes a table with WriterOptions.BlockAttr and
// checks that every index entry carries its block's properties (entries,
// attribute range, seqnums), that SkipBlock skips exactly the blocks it
// refuses without reading them, and that a table written without
// BlockAttr reads as before, with no properties and nothing skipped.
func TestBlockPropsSkipBlocks(t *testing.T) {
	var entries []kv
	for i := range 400 {
		v := strconv.Itoa(i)
		if i%50 == 7 {
			v = "none" // no attribute
		}
		entries = append(entries, kv{base.MakeInternalKey([]byte(fmt.Sprintf("k%04d", i)), base.SeqNum(1000+i), base.KindSet), []byte(v)})
	}
	dir := testdir.New(t)
	for _, withProps := range []bool{true, false} {
		path := filepath.Join(dir, fmt.Sprintf("%v.sst", withProps))
		o := WriterOptions{BlockSize: 256}
		if withProps {
			o.BlockAttr = numAttr
		}
		writeTable(t, path, o, entries, nil)
		r := openTable(t, path, nil)
		ix, err := r.index(r.bf.Source())
		if err != nil {
			t.Fatal(err)
		}
		if !withProps {
			if ix.props != nil {
				t.Fatalf("a table written without BlockAttr has block properties")
			}
		} else {
			if len(ix.props) != len(ix.items) || len(ix.items) < 10 {
				t.Fatalf("%d properties for %d blocks", len(ix.props), len(ix.items))
			}
			var total uint64
			for i, p := range ix.props {
				total += p.Entries
				if p.MinSeq > p.MaxSeq || p.Attributed > p.Entries || (p.Attributed > 0 && p.AttrMin > p.AttrMax) {
					t.Fatalf("block %d: %+v", i, p)
				}
				if uint64(p.MaxSeq-1000) != p.AttrMax && p.Attributed == p.Entries {
					t.Fatalf("block %d: attributes follow seqnums here: %+v", i, p)
				}
			}
			if total != uint64(len(entries)) {
				t.Fatalf("block properties count %d entries, the table has %d", total, len(entries))
			}
		}
		// Skip every block whose entries all have attributes below 200.
		var skipped int64
		it := r.NewIter(IterOptions{Skipped: &skipped, SkipBlock: func(p *BlockProps, _ base.InternalKey, _ bool, _ base.InternalKey) bool {
			return p.Attributed == p.Entries && p.AttrMax < 200
		}})
		got := readAll(t, it)
		it.Close()
		var want []kv
		for _, e := range entries {
			if a, ok := numAttr(nil, e.value); !ok || a >= 200 {
				want = append(want, e)
			}
		}
		if !withProps {
			if skipped != 0 || len(got) != len(entries) {
				t.Fatalf("without properties: %d skipped, %d of %d entries read", skipped, len(got), len(entries))
			}
			r.Close() // before the directory's removal, which Windows refuses while it is open
			continue
		}
		// What stays: every entry at or above 200, and the blocks below it
		// that hold an entry without attribute (or straddle 200).
		if skipped == 0 || len(got) >= len(entries) || len(got) < len(want) {
			t.Fatalf("skipped %d blocks, read %d entries (%d at or above 200, %d in all)", skipped, len(got), len(want), len(entries))
		}
		for _, e := range want {
			found := false
			for _, g := range got {
				if equalKV(e, g) {
					found = true
					break
				}
			}
			if !found {
				t.Fatalf("entry %s was skipped", e.key)
			}
		}
		r.Close()
	}
}

// TestBlockPropsContinues writes many versions of one key, so that they
// span blocks, and checks that exactly the blocks whose last key has
// versions in the next block say so.
func TestBlockPropsContinues(t *testing.T) {
	var entries []kv
	for i := range 100 {
		entries = append(entries, kv{base.MakeInternalKey([]byte("a"), base.SeqNum(1000-i), base.KindSet), []byte(strconv.Itoa(i))})
	}
	entries = append(entries, kv{base.MakeInternalKey([]byte("b"), 1, base.KindSet), []byte("1")})
	path := filepath.Join(testdir.New(t), "t.sst")
	writeTable(t, path, WriterOptions{BlockSize: 128, BlockAttr: numAttr}, entries, nil)
	r := openTable(t, path, nil)
	defer r.Close()
	ix, err := r.index(r.bf.Source())
	if err != nil {
		t.Fatal(err)
	}
	if len(ix.props) < 3 {
		t.Fatalf("%d blocks; the test wants versions of a spanning several", len(ix.props))
	}
	for i, p := range ix.props {
		last := ix.items[i].sep.UserKey
		want := i+1 < len(ix.props) && string(last) == "a" && ix.props[i+1].MaxSeq >= 901
		if p.Continues != want {
			t.Errorf("block %d (last key %q, next block's seqnums %v): Continues = %v", i, last, i+1 < len(ix.props), p.Continues)
		}
	}
}
