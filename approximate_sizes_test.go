package shale

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// TestGetApproximateSizes checks the sizes of key ranges against the table
// bytes: the whole key space is every table's size, halves split it about
// evenly, ranges past the keys are empty, larger ranges are never smaller,
// and a reversed range is an error.
func TestGetApproximateSizes(t *testing.T) {
	opts := testOptions(vfs.NewMem())
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }
	const n = 20000
	for i := range n {
		if err := d.Put(key(i), []byte(fmt.Sprintf("value-%d-%080d", i, i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}
	total, _ := d.GetIntProperty("rocksdb.live-sst-files-size")
	sizes, err := d.GetApproximateSizes([]Range{
		{nil, nil},
		{key(0), key(n)},
		{key(0), key(n / 2)},
		{key(n / 2), nil},
		{[]byte("zzz"), nil},
		{[]byte("a"), []byte("b")},
		{key(1000), key(2000)},
		{key(1000), key(3000)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if sizes[0] != total || sizes[1] != total {
		t.Errorf("whole key space: %d and %d bytes, tables hold %d", sizes[0], sizes[1], total)
	}
	if lo, hi := sizes[2], sizes[3]; lo+hi < total*9/10 || lo+hi > total || lo < total/3 || hi < total/3 {
		t.Errorf("halves %d + %d of %d bytes", lo, hi, total)
	}
	if sizes[4] != 0 || sizes[5] != 0 {
		t.Errorf("ranges without keys: %d and %d bytes", sizes[4], sizes[5])
	}
	if sizes[6] == 0 || sizes[7] < sizes[6] || sizes[7] > total/4 {
		t.Errorf("1000 keys %d bytes, 2000 keys %d bytes, of %d", sizes[6], sizes[7], total)
	}
	if _, err := d.GetApproximateSizes([]Range{{key(5), key(5)}}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("empty range: %v", err)
	}
	if _, err := d.GetApproximateSizes([]Range{{key(6), key(5)}}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("reversed range: %v", err)
	}
	d.Close()
	if _, err := d.GetApproximateSizes([]Range{{nil, nil}}); !errors.Is(err, ErrClosed) {
		t.Errorf("closed DB: %v", err)
	}
}
