package shale

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
)

// TestOpenRefusesPartitionFiltersWithoutTwoLevelIndex: PartitionFilters
// needs TwoLevelIndexSearch, and an unknown IndexType is refused, both
// with ErrInvalidArgument naming the option.
func TestOpenRefusesPartitionFiltersWithoutTwoLevelIndex(t *testing.T) {
	for _, set := range []func(*Options){
		func(o *Options) { o.PartitionFilters = true },
		func(o *Options) { o.IndexType = 1 },
		func(o *Options) { o.IndexType, o.MetadataBlockSize = TwoLevelIndexSearch, -1 },
	} {
		o := testOptions(vfs.NewMem())
		set(o)
		_, err := Open("/db", o)
		if !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("Open: %v, want ErrInvalidArgument", err)
		}
	}
}

// TestPartitionedIndexTablesReadWhateverTheOptions writes a database with
// partitioned index and filters, checks its tables' properties, reads it
// back, reopens it with a single index (the old tables still read by
// their own format, new ones single-index), and checks it with Check.
func TestPartitionedIndexTablesReadWhateverTheOptions(t *testing.T) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	setPartitionedTestOptions(o)
	d, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }
	const n = 3000
	for i := 0; i < n; i++ {
		if err := d.Put(key(i), []byte(fmt.Sprintf("value-%d", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	props, err := d.GetPropertiesOfAllTables()
	if err != nil {
		t.Fatal(err)
	}
	if len(props) == 0 {
		t.Fatal("no tables")
	}
	for name, p := range props {
		if p.IndexType != TwoLevelIndexSearch || p.IndexPartitions < 2 || p.FilterPartitions != p.IndexPartitions || p.TopLevelIndexSize == 0 {
			t.Fatalf("%s: index %s, %d index and %d filter partitions, top level %d bytes", name, p.IndexType, p.IndexPartitions, p.FilterPartitions, p.TopLevelIndexSize)
		}
	}
	checkKeys := func(d *DB) {
		t.Helper()
		for i := 0; i < n; i += 7 {
			v, err := d.Get(key(i), nil)
			if err != nil || string(v) != fmt.Sprintf("value-%d", i) {
				t.Fatalf("Get(%s) = %q, %v", key(i), v, err)
			}
		}
		if _, err := d.Get([]byte("key999999x"), nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get of an absent key: %v", err)
		}
		it := d.NewIterator(nil)
		c := 0
		for ok := it.First(); ok; ok = it.Next() {
			if string(it.Key()) != string(key(c)) {
				t.Fatalf("scan entry %d is %s", c, it.Key())
			}
			c++
		}
		if err := it.Close(); err != nil || c != n {
			t.Fatalf("scan: %d keys, %v", c, err)
		}
	}
	checkKeys(d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	o = testOptions(fs)
	o.CreateIfMissing = false
	d, err = Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	checkKeys(d)
	// New tables get one index block; both kinds read side by side.
	for i := 0; i < n; i += 3 {
		if err := d.Put(key(i), []byte(fmt.Sprintf("value-%d", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	props, err = d.GetPropertiesOfAllTables()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[IndexType]int{}
	for _, p := range props {
		kinds[p.IndexType]++
	}
	if kinds[BinarySearchIndex] == 0 || kinds[TwoLevelIndexSearch] == 0 {
		t.Fatalf("tables by index type: %v, want both", kinds)
	}
	checkKeys(d)
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	checkKeys(d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Check("/db", &Options{FS: fs})
	if err != nil || !rep.OK() {
		t.Fatalf("Check: %v\n%s", err, rep)
	}
}

// TestCheckFindsDamagedIndexPartition damages one index partition of a
// table: Open still succeeds (it reads only the top level), Check reports
// the table damaged with an error naming the file and the partition's
// offset, and a scan returns corruption rather than wrong answers.
func TestCheckFindsDamagedIndexPartition(t *testing.T) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	setPartitionedTestOptions(o)
	o.DisableAutoCompactions = true
	d, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2000; i++ {
		if err := d.Put([]byte(fmt.Sprintf("key%06d", i)), []byte("value"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	files := d.GetLiveFilesMetaData()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no tables")
	}
	path := "/db/" + files[0].Name
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := sstable.NewReader(f, sstable.ReaderOptions{FileName: path})
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := r.Layout()
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	var target sstable.BlockInfo
	for _, b := range blocks {
		if b.Kind == "index partition" {
			target = b
		}
	}
	if target.Length == 0 {
		t.Fatalf("no index partition in %s", path)
	}
	flipByteAt(t, fs, path, int64(target.Offset+target.Length/2))
	rep, err := Check("/db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	// The whole-file checksum fails first; the block's own damage is
	// reported beside it, naming the partition.
	damaged := false
	for _, cf := range rep.Files {
		damaged = damaged || (cf.Status == CheckDamaged && errors.Is(cf.Err, base.ErrCorruption) && "/db/"+cf.Name == path)
	}
	if !damaged || !strings.Contains(rep.String(), fmt.Sprintf("corruption in %s at offset %d: block checksum mismatch", path, target.Offset)) {
		t.Fatalf("Check did not report the partition at %s:%d:\n%s", path, target.Offset, rep)
	}
	o = testOptions(fs)
	o.CreateIfMissing = false
	d, err = Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	it := d.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
	}
	if err := it.Close(); !errors.Is(err, ErrCorruption) {
		t.Fatalf("scan over the damaged partition: %v, want corruption", err)
	}
}
