package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/vfs"
)

type kv struct {
	key   base.InternalKey
	value []byte
}

func newRand(t testing.TB) (*rand.Rand, uint64) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed>>7)), seed
}

// randomEntries returns sorted, distinct internal keys over about nKeys user
// keys, each with one to four versions.
func randomEntries(rng *rand.Rand, nKeys int) []kv {
	users := map[string]bool{}
	for len(users) < nKeys {
		n := 1 + rng.IntN(14)
		b := make([]byte, n)
		for i := range b {
			b[i] = "abcdz\xff"[rng.IntN(6)]
		}
		users[string(b)] = true
	}
	kinds := []base.Kind{base.KindSet, base.KindSet, base.KindSet, base.KindDelete, base.KindSingleDelete, base.KindMerge}
	var out []kv
	for u := range users {
		seqs := map[base.SeqNum]bool{}
		for v := rng.IntN(4); v >= 0; v-- {
			seqs[base.SeqNum(rng.IntN(1000))] = true
		}
		for s := range seqs {
			var val []byte
			switch rng.IntN(20) {
			case 0:
				val = nil
			case 1:
				val = bytes.Repeat([]byte{byte(rng.IntN(256))}, 3000+rng.IntN(3000))
			default:
				val = []byte(fmt.Sprintf("value-%s-%d-%s", u, s, bytes.Repeat([]byte("x"), rng.IntN(60))))
			}
			out = append(out, kv{base.MakeInternalKey([]byte(u), s, kinds[rng.IntN(len(kinds))]), val})
		}
	}
	slices.SortFunc(out, func(a, b kv) int { return base.InternalCompare(bytes.Compare, a.key, b.key) })
	return out
}

type tombstone struct {
	start, end string
	seq        base.SeqNum
}

// writeTable writes entries and tombstones to dir/name through vfs.Default.
func writeTable(t testing.TB, path string, o WriterOptions, entries []kv, tombs []tombstone) *WriterMetadata {
	t.Helper()
	f, err := vfs.Default.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, path, o)
	for _, e := range entries {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatal(err)
		}
	}
	for _, tb := range tombs {
		if err := w.AddRangeTombstone([]byte(tb.start), []byte(tb.end), tb.seq); err != nil {
			t.Fatal(err)
		}
	}
	m, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func openTable(t testing.TB, path string, c *cache.Cache) *Reader {
	t.Helper()
	f, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(f, ReaderOptions{Cache: c, FileName: path})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// bytesFile is a read-only vfs.File over a byte slice, for corruption tests
// that reopen many mutated copies of a table.
type bytesFile struct{ b []byte }

func (f *bytesFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(f.b)) {
		return 0, io.EOF
	}
	n := copy(p, f.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
func (f *bytesFile) Close() error                      { return nil }
func (f *bytesFile) Write(p []byte) (int, error)       { return 0, errors.New("read-only") }
func (f *bytesFile) Sync() error                       { return nil }
func (f *bytesFile) SyncData() error                   { return nil }
func (f *bytesFile) StartWriteback(off, n int64) error { return nil }
func (f *bytesFile) Size() (int64, error)              { return int64(len(f.b)), nil }
func (f *bytesFile) Preallocate(off, n int64) error    { return nil }
func (f *bytesFile) Truncate(size int64) error         { return errors.New("read-only") }

// modelGet is the reference for Reader.Get.
func modelGet(entries []kv, key []byte, snap base.SeqNum) (kv, bool) {
	for _, e := range entries {
		if bytes.Equal(e.key.UserKey, key) && e.key.SeqNum() <= snap {
			return e, true
		}
	}
	return kv{}, false
}

func readAll(t testing.TB, it base.InternalIterator) []kv {
	var out []kv
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, kv{it.Key().Clone(), append([]byte(nil), it.Value()...)})
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return out
}

func equalKV(a, b kv) bool {
	return bytes.Equal(a.key.UserKey, b.key.UserKey) && a.key.Trailer == b.key.Trailer && bytes.Equal(a.value, b.value)
}

// namedReader returns a Reader with no file, for tests of the decoders of
// its blocks: errors name the file name.
func namedReader(name string, cmp base.Compare) *Reader {
	r := &Reader{cmp: cmp, stats: &discardStats}
	r.bf.Init(nil, block.FileOptions{Name: name})
	return r
}
