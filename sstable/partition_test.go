package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

// partitionedOptions writes tiny data blocks and index partitions, so
// that even small tables have many partitions.
func partitionedOptions(filters bool) WriterOptions {
	return WriterOptions{BlockSize: 128, IndexType: TwoLevelIndexSearch, PartitionFilters: filters,
		MetadataBlockSize: 64, Compression: NoCompression}
}

// openPartitioned opens path with a cache of cacheSize bytes (none when 0).
func openPartitioned(t *testing.T, path string, cacheSize int64, cacheIF bool, prefix base.SliceTransform) *Reader {
	t.Helper()
	f, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var c *cache.Cache
	if cacheSize > 0 {
		c = cache.New(cacheSize)
	}
	r, err := NewReader(f, ReaderOptions{Cache: c, FileName: path, CacheIndexAndFilterBlocks: cacheIF && c != nil,
		PrefixExtractor: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkTableAgainstModel checks Get, MayContain, MultiGetBatch, a full
// scan both ways, and bounded seeks of r against entries.
//
// With evict, the Reader's blocks (top level, partitions, data) are
// evicted from the cache before every operation, so that each is read
// again.
func checkTableAgainstModel(t *testing.T, r *Reader, entries []kv, evict func()) {
	t.Helper()
	if evict == nil {
		evict = func() {}
	}
	rng, _ := newRand(t)
	users := map[string]bool{}
	for _, e := range entries {
		users[string(e.key.UserKey)] = true
	}
	var probes [][]byte
	for u := range users {
		probes = append(probes, []byte(u), append([]byte(u), 0), []byte(u)[:len(u)-1])
	}
	probes = append(probes, []byte{}, []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"))
	var b MultiGetBatch
	type want struct {
		id int
		e  kv
		ok bool
	}
	var wants []want
	for _, k := range probes {
		evict()
		snap := base.SeqNum(rng.IntN(1100))
		e, ok := modelGet(entries, k, snap)
		if users[string(k)] && !r.MayContain(k) {
			t.Fatalf("MayContain(%q) = false for a key of the table", k)
		}
		v, kind, seq, found, err := r.Get(k, snap, true)
		if err != nil {
			t.Fatal(err)
		}
		if found != ok || (ok && (!bytes.Equal(v, e.value) || kind != e.key.Kind() || seq != e.key.SeqNum())) {
			t.Fatalf("Get(%q, %d) = %v %s %d, model %v %s", k, snap, found, kind, seq, ok, e.key)
		}
		if r.MayContain(k) {
			wants = append(wants, want{b.Add(r, k, snap, rng.IntN(2) == 0), e, ok})
		}
	}
	runBatch(t, &b, nil, 1<<20)
	for _, w := range wants {
		v, kind, seq, found, _, err := b.Result(w.id)
		if err != nil {
			t.Fatal(err)
		}
		if found != w.ok || (found && (!bytes.Equal(v, w.e.value) || kind != w.e.key.Kind() || seq != w.e.key.SeqNum())) {
			t.Fatalf("MultiGet lookup %d = %v %s %d, model %v %s", w.id, found, kind, seq, w.ok, w.e.key)
		}
	}
	it := r.NewIter(IterOptions{FillCache: true})
	got := readAll(t, it)
	if len(got) != len(entries) {
		t.Fatalf("scan holds %d entries, model %d", len(got), len(entries))
	}
	for i := range got {
		if !equalKV(got[i], entries[i]) {
			t.Fatalf("scan entry %d = %s, model %s", i, got[i].key, entries[i].key)
		}
	}
	n := 0
	for ok := it.Last(); ok; ok = it.Prev() {
		n++
		if e := entries[len(entries)-n]; !equalKV(kv{it.Key(), it.Value()}, e) {
			t.Fatalf("reverse scan entry %d = %s, model %s", n, it.Key(), e.key)
		}
	}
	if n != len(entries) || it.Error() != nil {
		t.Fatalf("reverse scan: %d entries, model %d, error %v", n, len(entries), it.Error())
	}
	it.Close()
	for round := 0; round < 200; round++ {
		evict()
		var lower, upper []byte
		if rng.IntN(2) == 0 {
			lower = probes[rng.IntN(len(probes))]
		}
		if rng.IntN(2) == 0 {
			upper = probes[rng.IntN(len(probes))]
		}
		inBounds := func(u []byte) bool {
			return (lower == nil || bytes.Compare(u, lower) >= 0) && (upper == nil || bytes.Compare(u, upper) < 0)
		}
		it := r.NewIter(IterOptions{Lower: lower, Upper: upper, FillCache: rng.IntN(2) == 0})
		key := probes[rng.IntN(len(probes))]
		// SeekGE then a few Next, against the model.
		idx := -1
		for i, e := range entries {
			if inBounds(e.key.UserKey) && bytes.Compare(e.key.UserKey, key) >= 0 {
				idx = i
				break
			}
		}
		ok := it.SeekGE(key)
		for step := 0; step < 5; step++ {
			for idx >= 0 && idx < len(entries) && !inBounds(entries[idx].key.UserKey) {
				idx = len(entries)
			}
			if wantOK := idx >= 0 && idx < len(entries); ok != wantOK || (ok && !equalKV(kv{it.Key(), it.Value()}, entries[idx])) {
				t.Fatalf("round %d: SeekGE(%q) [%q, %q) step %d: %v %s, model index %d", round, key, lower, upper, step, ok, it.Key(), idx)
			}
			if !ok {
				break
			}
			ok = it.Next()
			idx++
		}
		// SeekLT then a few Prev.
		idx = -1
		for i := len(entries) - 1; i >= 0; i-- {
			if u := entries[i].key.UserKey; inBounds(u) && bytes.Compare(u, key) < 0 {
				idx = i
				break
			}
		}
		ok = it.SeekLT(key)
		for step := 0; step < 5; step++ {
			if idx >= 0 && !inBounds(entries[idx].key.UserKey) {
				idx = -1
			}
			if wantOK := idx >= 0; ok != wantOK || (ok && !equalKV(kv{it.Key(), it.Value()}, entries[idx])) {
				t.Fatalf("round %d: SeekLT(%q) [%q, %q) step %d: %v %s, model index %d", round, key, lower, upper, step, ok, it.Key(), idx)
			}
			if !ok {
				break
			}
			ok = it.Prev()
			idx--
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.VerifyChecksums(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Layout(); err != nil {
		t.Fatal(err)
	}
}

// TestPartitionedIndexModel checks tables with many index (and filter)
// partitions against the model: lookups, batched lookups, scans and
// bounded seeks across partition boundaries, with the partitions in a
// roomy cache, a tiny one (evicted all the time), none, and with the top
// level in the cache.
func TestPartitionedIndexModel(t *testing.T) {
	dir := testdir.New(t)
	rng, _ := newRand(t)
	for _, filters := range []bool{false, true} {
		entries := randomEntries(rng, 300)
		path := filepath.Join(dir, fmt.Sprintf("p-%v.sst", filters))
		m := writeTable(t, path, partitionedOptions(filters), entries, nil)
		if m.Props.IndexType != TwoLevelIndexSearch || m.Props.IndexPartitions < 10 {
			t.Fatalf("index type %s with %d partitions, want many", m.Props.IndexType, m.Props.IndexPartitions)
		}
		if filters && m.Props.FilterPartitions != m.Props.IndexPartitions {
			t.Fatalf("%d filter partitions for %d index partitions", m.Props.FilterPartitions, m.Props.IndexPartitions)
		}
		for _, c := range []struct {
			size           int64
			cacheIF, evict bool
		}{{1 << 20, false, false}, {1 << 20, true, false}, {1 << 20, true, true}, {1 << 20, false, true},
			{2 << 10, true, false}, {0, false, false}} {
			t.Run(fmt.Sprintf("filters=%v/cache=%d/cacheIF=%v/evict=%v", filters, c.size, c.cacheIF, c.evict), func(t *testing.T) {
				r := openPartitioned(t, path, c.size, c.cacheIF, nil)
				defer r.Close()
				var evict func()
				if c.evict {
					evict = func() { r.bf.Cache().EvictID(r.CacheID()) }
				}
				checkTableAgainstModel(t, r, entries, evict)
			})
		}
	}
}

// TestPartitionedIndexOneKeyAndHugeKeys checks a table of one key, and
// one of keys larger than a partition's target size (a partition per
// data block).
func TestPartitionedIndexOneKeyAndHugeKeys(t *testing.T) {
	dir := testdir.New(t)
	one := []kv{{base.MakeInternalKey([]byte("k"), 5, base.KindSet), []byte("v")}}
	var huge []kv
	for i := 0; i < 40; i++ {
		k := append(bytes.Repeat([]byte{'a' + byte(i%26)}, 300), byte(i))
		huge = append(huge, kv{base.MakeInternalKey(k, base.SeqNum(i), base.KindSet), []byte(fmt.Sprint(i))})
	}
	for name, entries := range map[string][]kv{"one": one, "huge": huge} {
		path := filepath.Join(dir, name+".sst")
		m := writeTable(t, path, partitionedOptions(true), sortedKV(entries), nil)
		if m.Props.IndexType != TwoLevelIndexSearch {
			t.Fatalf("%s: index type %s", name, m.Props.IndexType)
		}
		r := openPartitioned(t, path, 1<<20, false, nil)
		checkTableAgainstModel(t, r, sortedKV(entries), nil)
		r.Close()
	}
}

func sortedKV(entries []kv) []kv {
	out := append([]kv(nil), entries...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && base.InternalCompare(bytes.Compare, out[j-1].key, out[j].key) > 0; j-- {
			out[j-1], out[j] = out[j], out[j-1]
		}
	}
	return out
}

// TestPartitionedIndexEmptyTable checks that a table without data blocks
// is written with the single index, whatever IndexType says, and reads.
func TestPartitionedIndexEmptyTable(t *testing.T) {
	path := filepath.Join(testdir.New(t), "empty.sst")
	m := writeTable(t, path, partitionedOptions(true), nil, []tombstone{{"a", "b", 3}})
	if m.Props.IndexType != BinarySearchIndex {
		t.Fatalf("empty table written with index type %s", m.Props.IndexType)
	}
	r := openPartitioned(t, path, 1<<20, false, nil)
	defer r.Close()
	if readAll(t, r.NewIter(IterOptions{})) != nil {
		t.Fatal("empty table iterates entries")
	}
	if err := r.VerifyChecksums(); err != nil {
		t.Fatal(err)
	}
}

// TestPartitionedPrefixFilter checks prefix filtering with partitioned
// filters: no prefix of the table is ruled out (false negatives would
// lose keys), in whole-key and prefix-only tables, and most absent
// prefixes are.
func TestPartitionedPrefixFilter(t *testing.T) {
	dir := testdir.New(t)
	tr := base.NewFixedPrefixTransform(3)
	var entries []kv
	for p := 0; p < 60; p++ {
		for k := 0; k < 1+p%7; k++ {
			key := fmt.Sprintf("%03d-%02d", p*2, k)
			entries = append(entries, kv{base.MakeInternalKey([]byte(key), 1, base.KindSet), []byte(key)})
		}
	}
	for _, wholeKeys := range []bool{true, false} {
		o := partitionedOptions(true)
		o.PrefixExtractor, o.DisableWholeKeyFiltering = tr, !wholeKeys
		path := filepath.Join(dir, fmt.Sprintf("prefix-%v.sst", wholeKeys))
		writeTable(t, path, o, entries, nil)
		r := openPartitioned(t, path, 1<<20, false, tr)
		ruledOut := 0
		for p := 0; p < 120; p++ {
			prefix := []byte(fmt.Sprintf("%03d", p))
			may := r.MayContainPrefix(tr.Name(), prefix)
			if p%2 == 0 && !may {
				t.Fatalf("wholeKeys=%v: prefix %s of the table ruled out", wholeKeys, prefix)
			}
			if p%2 == 1 && !may {
				ruledOut++
			}
		}
		if ruledOut < 40 {
			t.Fatalf("wholeKeys=%v: only %d of 60 absent prefixes ruled out", wholeKeys, ruledOut)
		}
		for _, e := range entries {
			if !r.MayContain(e.key.UserKey) {
				t.Fatalf("wholeKeys=%v: key %q ruled out", wholeKeys, e.key.UserKey)
			}
		}
		checkTableAgainstModel(t, r, entries, nil)
		r.Close()
	}
}

// TestPartitionedIndexCorruption damages one index partition and one filter
// partition: the open succeeds (only the top levels are read), and a read
// of the damaged partition, VerifyChecksums and a scan report corruption
// naming the file and the partition's offset.
func TestPartitionedIndexCorruption(t *testing.T) {
	dir := testdir.New(t)
	rng, _ := newRand(t)
	entries := randomEntries(rng, 200)
	path := filepath.Join(dir, "c.sst")
	writeTable(t, path, partitionedOptions(true), entries, nil)
	r := openPartitioned(t, path, 1<<20, false, nil)
	blocks, err := r.Layout()
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := vfs.ReadFile(vfs.Default, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"index partition", "filter partition"} {
		var target BlockInfo
		n := 0
		for _, b := range blocks {
			if b.Kind == kind {
				n++
				if n == 3 {
					target = b
				}
			}
		}
		if n < 3 {
			t.Fatalf("only %d blocks of kind %q", n, kind)
		}
		bad := append([]byte(nil), raw...)
		bad[target.Offset+target.Length/2] ^= 0x40
		name := "bad-" + kind
		r, err := NewReader(&bytesFile{bad}, ReaderOptions{FileName: name, Cache: cache.New(1 << 20)})
		if err != nil {
			t.Fatalf("%s: open: %v", kind, err)
		}
		checkCorrupt := func(what string, err error) {
			t.Helper()
			var ce *base.CorruptionError
			if !errors.As(err, &ce) || ce.File != name || ce.Offset != int64(target.Offset) || !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("%s: %s: %v, want corruption of %s at offset %d", kind, what, err, name, target.Offset)
			}
		}
		checkCorrupt("VerifyChecksums", r.VerifyChecksums())
		if kind == "index partition" {
			it := r.NewIter(IterOptions{})
			for ok := it.First(); ok; ok = it.Next() {
			}
			checkCorrupt("scan", it.Close())
			it = r.NewIter(IterOptions{})
			for ok := it.Last(); ok; ok = it.Prev() {
			}
			checkCorrupt("reverse scan", it.Close())
			_, err := r.Layout()
			checkCorrupt("Layout", err)
		}
		r.Close()
	}
}

// TestOldFormatReaderRefusesPartitioned checks the footer marks a
// partitioned table with format version 2 and a single-index table with 1.
func TestPartitionedIndexFormatVersion(t *testing.T) {
	dir := testdir.New(t)
	rng, _ := newRand(t)
	entries := randomEntries(rng, 50)
	for _, c := range []struct {
		o    WriterOptions
		want uint32
	}{{WriterOptions{}, formatVersion}, {partitionedOptions(false), formatVersionTwoLevel}} {
		path := filepath.Join(dir, fmt.Sprint(c.want)+".sst")
		writeTable(t, path, c.o, entries, nil)
		raw, err := vfs.ReadFile(vfs.Default, path)
		if err != nil {
			t.Fatal(err)
		}
		ft, err := decodeFooter(path, 0, raw[len(raw)-footerLen:])
		if err != nil {
			t.Fatal(err)
		}
		if ft.twoLevel != (c.want == formatVersionTwoLevel) {
			t.Fatalf("format %d: twoLevel %v", c.want, ft.twoLevel)
		}
	}
}
