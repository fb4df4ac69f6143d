package sstable

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/testdir"
)

// prefixEntries returns Sets of keys "p<prefix 4 digits>k<n>" for every
// even prefix below 2*nPrefixes (odd ones are absent), perPrefix keys
// each: a table whose Fixed(5) prefixes are known.
func prefixEntries(nPrefixes, perPrefix int) []kv {
	var out []kv
	for p := 0; p < 2*nPrefixes; p += 2 {
		for k := 0; k < perPrefix; k++ {
			key := fmt.Sprintf("p%04dk%03d", p, k)
			out = append(out, kv{base.MakeInternalKey([]byte(key), base.SeqNum(p*perPrefix+k+1), base.KindSet), []byte("v-" + key)})
		}
	}
	return out
}

func prefixOf(p int) []byte { return []byte(fmt.Sprintf("p%04d", p)) }

// TestPrefixFilterAnswers: a table written with a prefix extractor holds
// every prefix of its keys in its filter, and rules out nearly all absent
// ones; its properties name the extractor. With whole keys off, point
// lookups probe the key's prefix, and only through a reader with the
// table's extractor.
func TestPrefixFilterAnswers(t *testing.T) {
	dir := testdir.New(t)
	tr := base.NewFixedPrefixTransform(5)
	const nPrefixes, perPrefix = 400, 5
	entries := prefixEntries(nPrefixes, perPrefix)
	for _, wholeOff := range []bool{false, true} {
		t.Run(fmt.Sprintf("wholeKeysOff=%v", wholeOff), func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("whole-off-%v.sst", wholeOff))
			writeTable(t, path, WriterOptions{PrefixExtractor: tr, DisableWholeKeyFiltering: wholeOff, BlockSize: 256}, entries, nil)
			r := openTableWith(t, path, ReaderOptions{PrefixExtractor: tr})
			defer r.Close()
			p := r.Properties()
			if p.PrefixExtractorName != tr.Name() || !p.PrefixFiltering || p.WholeKeyFiltering == wholeOff {
				t.Fatalf("properties: extractor %q, prefix filtering %v, whole key filtering %v", p.PrefixExtractorName, p.PrefixFiltering, p.WholeKeyFiltering)
			}
			if r.PrefixExtractorName() != tr.Name() {
				t.Fatalf("PrefixExtractorName() = %q", r.PrefixExtractorName())
			}
			falsePositives := 0
			for i := 0; i < 2*nPrefixes; i++ {
				may := r.MayContainPrefix(tr.Name(), prefixOf(i))
				if i%2 == 0 && !may {
					t.Fatalf("prefix %s of the table ruled out", prefixOf(i))
				}
				if i%2 == 1 && may {
					falsePositives++
				}
				// Another extractor's prefixes are never ruled out.
				if !r.MayContainPrefix("rocksdb.FixedPrefix.4", prefixOf(i)) {
					t.Fatalf("prefix %s ruled out for another extractor", prefixOf(i))
				}
			}
			if falsePositives > nPrefixes/20 {
				t.Errorf("%d of %d absent prefixes pass the filter", falsePositives, nPrefixes)
			}
			// Point lookups: present keys always pass.
			for _, e := range entries {
				if !r.MayContain(e.key.UserKey) {
					t.Fatalf("MayContain(%q) = false for a key of the table", e.key.UserKey)
				}
			}
			// Absent keys of absent prefixes are ruled out either way.
			ruledOut := 0
			for i := 1; i < 2*nPrefixes; i += 2 {
				if !r.MayContain([]byte(fmt.Sprintf("p%04dk000", i))) {
					ruledOut++
				}
			}
			if ruledOut < nPrefixes*9/10 {
				t.Errorf("MayContain ruled out %d of %d keys of absent prefixes", ruledOut, nPrefixes)
			}
			// A key outside the extractor's domain cannot be ruled out by
			// prefixes alone.
			if wholeOff && !r.MayContain([]byte("p12")) {
				t.Error("MayContain of a key without a prefix = false in a table of prefixes only")
			}
			if wholeOff {
				// Without the table's extractor the prefix-only filter
				// answers nothing for point lookups.
				r2 := openTableWith(t, path, ReaderOptions{PrefixExtractor: base.NewCappedPrefixTransform(5)})
				defer r2.Close()
				for i := 1; i < 2*nPrefixes; i += 2 {
					if !r2.MayContain([]byte(fmt.Sprintf("p%04dk000", i))) {
						t.Fatal("a reader with another extractor ruled a key out with a filter of prefixes only")
					}
				}
			}
		})
	}
}

// TestPrefixOnlyFilterHiddenFromOldReaders: a table without whole keys in
// its filter stores it under another meta block name than the whole-key
// filter, so a reader that knows only that name uses no filter at all
// rather than taking prefixes for keys.
func TestPrefixOnlyFilterHiddenFromOldReaders(t *testing.T) {
	dir := testdir.New(t)
	tr := base.NewFixedPrefixTransform(5)
	entries := prefixEntries(20, 3)
	for _, wholeOff := range []bool{false, true} {
		path := filepath.Join(dir, fmt.Sprintf("t-%v.sst", wholeOff))
		writeTable(t, path, WriterOptions{PrefixExtractor: tr, DisableWholeKeyFiltering: wholeOff}, entries, nil)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// The metaindex stores every name whole (restart interval 1).
		hasWhole := bytes.Contains(b, []byte(metaFilterName))
		hasPrefix := bytes.Contains(b, []byte(metaPrefixFilterName))
		if hasWhole == wholeOff || hasPrefix != wholeOff {
			t.Errorf("whole keys off %v: the table has %q %v, %q %v", wholeOff, metaFilterName, hasWhole, metaPrefixFilterName, hasPrefix)
		}
	}
}

// TestPrefixSeekSkipsTable: SeekPrefixGE of a prefix the filter rules out
// reads no data block and returns false; of a present prefix it is SeekGE.
// A table written with another extractor, or none, is never skipped.
func TestPrefixSeekSkipsTable(t *testing.T) {
	dir := testdir.New(t)
	tr := base.NewFixedPrefixTransform(5)
	entries := prefixEntries(200, 4)
	cases := []struct {
		name     string
		writer   base.SliceTransform
		iter     base.SliceTransform
		filtered bool
	}{
		{"same extractor", tr, base.NewFixedPrefixTransform(5), true},
		{"another extractor", base.NewCappedPrefixTransform(5), tr, false},
		{"no extractor", nil, tr, false},
		{"iterator without extractor", tr, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name+".sst")
			writeTable(t, path, WriterOptions{PrefixExtractor: c.writer, BlockSize: 256}, entries, nil)
			r := openTableWith(t, path, ReaderOptions{})
			defer r.Close()
			skipped := 0
			for i := 0; i < 400; i++ {
				var stats ReadStats
				it := r.NewIter(IterOptions{PrefixExtractor: c.iter, Stats: &stats})
				key := append(prefixOf(i), 'k')
				ok := it.(base.PrefixSeeker).SeekPrefixGE(prefixOf(i), key)
				ref := r.NewIter(IterOptions{})
				refOK := ref.SeekGE(key)
				switch {
				case ok && (!refOK || !bytes.Equal(it.Key().UserKey, ref.Key().UserKey) || it.Key().Trailer != ref.Key().Trailer):
					t.Fatalf("SeekPrefixGE(%s) landed on %s, SeekGE on %s (%v)", key, it.Key(), ref.Key(), refOK)
				case !ok && refOK && bytes.HasPrefix(ref.Key().UserKey, prefixOf(i)):
					t.Fatalf("SeekPrefixGE(%s) = false, but the table holds %s", key, ref.Key())
				case !ok && stats.PrefixUseful.Load() == 1:
					// Ruled out by the filter, not run off the end.
					skipped++
					if n := stats.BlockReads.Load() + stats.CacheHits.Load(); n != 0 {
						t.Fatalf("SeekPrefixGE(%s) ruled the table out after reading %d data blocks", key, n)
					}
					if it.Next() || it.Prev() {
						t.Fatal("Next or Prev moved an iterator the prefix filter ruled out")
					}
				case ok && stats.PrefixUseful.Load() != 0:
					t.Fatalf("SeekPrefixGE(%s) counted a useful probe but read the table", key)
				}
				if !c.filtered && stats.PrefixChecks.Load() != 0 {
					t.Fatalf("the prefix filter was probed for a table of extractor %v by an iterator of %v", c.writer, c.iter)
				}
				it.Close()
				ref.Close()
			}
			if c.filtered && skipped < 180 {
				t.Errorf("%d of the 200 absent prefixes skipped the table", skipped)
			}
			if !c.filtered && skipped > 0 {
				t.Errorf("%d seeks skipped a table whose filter they cannot use", skipped)
			}
		})
	}
}
