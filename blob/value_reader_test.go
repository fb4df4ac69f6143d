package blob

import (
	"bytes"
	"fmt"
	"testing"
)

// TestValueReaderReadsAhead: a ValueReader returns what Get returns, for
// records read in file order (served from readahead windows after the
// first reads: far fewer file reads than records), backward and at random,
// with every compression and checksum, with and without a cache; turning
// automatic readahead off makes one read per record.
func TestValueReaderReadsAhead(t *testing.T) {
	rng := newRand(t)
	recs := make([]record, 300)
	for i := range recs {
		recs[i] = record{[]byte(fmt.Sprintf("key%04d", i)), bytes.Repeat([]byte{byte('a' + i%26)}, 50+rng.IntN(200))}
	}
	for _, o := range allOptions() {
		data, xs, _ := writeBlob(t, o, recs)
		for _, maxAuto := range []int64{0, -1} {
			name := fmt.Sprintf("%s/%s/maxAuto=%d", o.Compression, o.Checksum, maxAuto)
			var stats ReadStats
			r, err := openBytes(data, ReaderOptions{MaxAutoReadaheadSize: maxAuto})
			if err != nil {
				t.Fatal(err)
			}
			v := r.NewValueReader(&stats)
			orders := [][]int{make([]int, len(recs)), make([]int, len(recs)), rng.Perm(len(recs))}
			for i := range recs {
				orders[0][i], orders[1][i] = i, len(recs)-1-i
			}
			for oi, order := range orders {
				before := stats.FileReads.Load()
				for _, i := range order {
					got, err := v.Get(xs[i], recs[i].key, false)
					if err != nil || !bytes.Equal(got, recs[i].value) {
						t.Fatalf("%s: order %d: Get %d = %.20q, %v", name, oi, i, got, err)
					}
				}
				reads := stats.FileReads.Load() - before
				switch {
				case oi == 0 && maxAuto == 0 && reads > uint64(len(recs))/4:
					t.Errorf("%s: %d file reads for %d records in file order, want readahead", name, reads, len(recs))
				case maxAuto < 0 && reads != uint64(len(recs)):
					t.Errorf("%s: readahead off: %d file reads for %d records", name, reads, len(recs))
				}
			}
			if _, err := v.Get(xs[0], []byte("other"), false); err == nil {
				t.Errorf("%s: a key mismatch read back", name)
			}
			v.Close()
		}
	}
}
