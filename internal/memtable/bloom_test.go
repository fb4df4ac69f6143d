package memtable

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shaledb/shale/internal/base"
)

// TestPrefixBloomAnswers: every prefix of a point key added is in the
// bloom, nearly every other one is ruled out, range tombstones and keys
// outside the domain add nothing, and SeekPrefixGE skips the list only for
// an iterator of the bloom's extractor.
func TestPrefixBloomAnswers(t *testing.T) {
	tr := base.NewFixedPrefixTransform(5)
	m := New(nil, 1<<20)
	m.SetPrefixBloom(tr, 4<<10)
	if m.PrefixBloomBytes() != 4<<10 || m.PrefixExtractorName() != tr.Name() {
		t.Fatalf("bloom of %d bytes for %q", m.PrefixBloomBytes(), m.PrefixExtractorName())
	}
	seq := base.SeqNum(1)
	add := func(kind base.Kind, key, value string) {
		if err := m.Add(seq, kind, []byte(key), []byte(value)); err != nil {
			t.Fatal(err)
		}
		seq++
	}
	const n = 1000
	for p := 0; p < 2*n; p += 2 {
		for k := 0; k < 3; k++ {
			add(base.KindSet, fmt.Sprintf("p%04dk%d", p, k), "v")
		}
	}
	add(base.KindDelete, "p1999k0", "")         // a tombstone is a point key: its prefix is in
	add(base.KindRangeDelete, "p1997", "p1998") // a range tombstone is not
	add(base.KindSet, "p1", "v")                // no prefix
	prefix := func(p int) []byte { return []byte(fmt.Sprintf("p%04d", p)) }
	falsePositives := 0
	for p := 0; p < 2*n; p++ {
		may := m.MayContainPrefix(tr.Name(), prefix(p))
		switch {
		case p%2 == 0 || p == 1999:
			if !may {
				t.Fatalf("prefix %s of a key added is ruled out", prefix(p))
			}
		case may:
			falsePositives++
		}
		if !m.MayContainPrefix("rocksdb.CappedPrefix.5", prefix(p)) {
			t.Fatal("another extractor's prefix ruled out")
		}
	}
	// 4 KiB for 1001 prefixes is about 33 bits each: well under 1%.
	if falsePositives > n/50 {
		t.Errorf("%d of %d absent prefixes pass the bloom", falsePositives, n)
	}

	for _, c := range []struct {
		extractor string
		filtered  bool
	}{{tr.Name(), true}, {"rocksdb.CappedPrefix.5", false}, {"", false}} {
		var counts BloomCounts
		it := m.NewIterWith(IterOptions{PrefixExtractor: c.extractor, Bloom: &counts})
		ref := m.NewIter()
		skipped := 0
		for p := 0; p < 2*n; p++ {
			key := append(prefix(p), 'k')
			ok := it.(base.PrefixSeeker).SeekPrefixGE(prefix(p), key)
			refOK := ref.SeekGE(key)
			if ok {
				if !refOK || !bytes.Equal(it.Key().UserKey, ref.Key().UserKey) || it.Key().Trailer != ref.Key().Trailer {
					t.Fatalf("SeekPrefixGE(%s) at %s, SeekGE at %s", key, it.Key(), ref.Key())
				}
				continue
			}
			skipped++
			if refOK && bytes.HasPrefix(ref.Key().UserKey, prefix(p)) {
				t.Fatalf("SeekPrefixGE(%s) = false, but the memtable holds %s", key, ref.Key())
			}
			if it.Next() || it.Prev() {
				t.Fatal("a ruled-out iterator moved")
			}
		}
		if !c.filtered {
			if skipped > 0 || counts.Checks > 0 {
				t.Errorf("extractor %q: %d seeks skipped, %d probes, with a bloom of another extractor", c.extractor, skipped, counts.Checks)
			}
			continue
		}
		if counts.Checks != 2*n || counts.Useful != uint64(skipped) || skipped < n*9/10 {
			t.Errorf("%d probes, %d useful, %d skipped of %d absent", counts.Checks, counts.Useful, skipped, n)
		}
	}
}

// TestPrefixBloomConcurrentReaders: readers probing while the writer adds
// find the prefix of every key whose Add returned before they looked
// (run with -race).
func TestPrefixBloomConcurrentReaders(t *testing.T) {
	tr := base.NewCappedPrefixTransform(6)
	m := New(nil, 8<<20)
	m.SetPrefixBloom(tr, 16<<10)
	const n = 20000
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%05d/x", i)) }
	var added atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for j := 0; ; j++ {
				done := added.Load()
				if done == n {
					return
				}
				if done == 0 {
					continue
				}
				i := int((int64(j)*7919 + int64(r)) % done)
				if !m.MayContainPrefix(tr.Name(), tr.Transform(key(i))) {
					errs <- fmt.Errorf("prefix of key %d ruled out after its Add returned", i)
					return
				}
			}
		}(r)
	}
	for i := 0; i < n; i++ {
		if err := m.Add(base.SeqNum(i+1), base.KindSet, key(i), nil); err != nil {
			t.Fatal(err)
		}
		added.Store(int64(i + 1))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
