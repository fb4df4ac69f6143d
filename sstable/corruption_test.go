package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"path/filepath"
	"testing"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/vfs"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	f, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, _ := f.Size()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := vfs.Default.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func wantCorruption(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("%s: got %v, want a corruption error", what, err)
	}
}

// checkDamaged reads a damaged copy of a table: every answer must be the
// original data or a corruption error. It reads once without a cache and
// once through one, where seeks use the cached blocks' search structures.
func checkDamaged(t *testing.T, what string, b []byte, entries []kv, spans string) {
	checkDamagedWith(t, what, b, entries, spans, nil)
	checkDamagedWith(t, what+" (cached)", b, entries, spans, cache.New(1<<20))
}

func checkDamagedWith(t *testing.T, what string, b []byte, entries []kv, spans string, c *cache.Cache) {
	fill := c != nil
	r, err := NewReader(&bytesFile{b}, ReaderOptions{FileName: "damaged.sst", Cache: c})
	if err != nil {
		wantCorruption(t, what+": open", err)
		return
	}
	defer r.Close()
	if got := fmt.Sprint(r.RangeTombstones()); got != spans {
		t.Fatalf("%s: range tombstones %s, want %s", what, got, spans)
	}
	it := r.NewIter(IterOptions{FillCache: fill})
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(entries) || !equalKV(kv{it.Key(), it.Value()}, entries[i]) {
			t.Fatalf("%s: forward entry %d is %s, silently wrong", what, i, it.Key())
		}
		i++
	}
	if err := it.Error(); err != nil {
		wantCorruption(t, what+": forward", err)
	} else if i != len(entries) {
		t.Fatalf("%s: forward iteration silently stopped at %d of %d", what, i, len(entries))
	}
	i = len(entries) - 1
	for ok := it.Last(); ok; ok = it.Prev() {
		if i < 0 || !equalKV(kv{it.Key(), it.Value()}, entries[i]) {
			t.Fatalf("%s: backward entry %d is %s, silently wrong", what, i, it.Key())
		}
		i--
	}
	if err := it.Error(); err != nil {
		wantCorruption(t, what+": backward", err)
	} else if i != -1 {
		t.Fatalf("%s: backward iteration silently stopped at %d", what, i)
	}
	// Seek to every entry: through the search structure once cached.
	for j, e := range entries {
		if !it.SeekGE(e.key.UserKey) {
			if err := it.Error(); err == nil {
				t.Fatalf("%s: SeekGE(%q) found nothing, silently", what, e.key.UserKey)
			} else {
				wantCorruption(t, what+": SeekGE", err)
			}
			continue
		}
		want := j
		for want > 0 && bytes.Equal(entries[want-1].key.UserKey, e.key.UserKey) {
			want--
		}
		if !equalKV(kv{it.Key(), it.Value()}, entries[want]) {
			t.Fatalf("%s: SeekGE(%q) landed on %s, silently wrong", what, e.key.UserKey, it.Key())
		}
	}
	it.Close()
	for _, e := range entries {
		v, kind, seq, ok, err := r.Get(e.key.UserKey, e.key.SeqNum(), fill)
		if err != nil {
			wantCorruption(t, what+": Get", err)
			continue
		}
		if !ok || kind != e.key.Kind() || seq != e.key.SeqNum() || !bytes.Equal(v, e.value) {
			t.Fatalf("%s: Get(%q) = %v %s#%d, silently wrong", what, e.key.UserKey, ok, kind, seq)
		}
	}
}

// TestEveryByteFlipped damages each byte of a small table in turn.
func TestEveryByteFlipped(t *testing.T) {
	dir := testdir.New(t)
	for _, o := range []WriterOptions{
		{BlockSize: 128, BlockRestartInterval: 3, Compression: SnappyCompression},
		{BlockSize: 256, Compression: ZstdCompression, Checksum: ChecksumXXHash64},
	} {
		var entries []kv
		for i := 0; i < 24; i++ {
			entries = append(entries, kv{base.MakeInternalKey([]byte(fmt.Sprintf("key%03d", i*3)), base.SeqNum(100+i), base.KindSet),
				bytes.Repeat([]byte{'v', byte('a' + i%26)}, 8)})
		}
		path := filepath.Join(dir, fmt.Sprintf("flip-%s.sst", o.Compression))
		writeTable(t, path, o, entries, []tombstone{{"key010", "key020", 50}, {"key030", "key040", 60}, {"key030", "key040", 40}})
		orig := readFile(t, path)
		r := openTable(t, path, nil)
		spans := fmt.Sprint(r.RangeTombstones())
		r.Close()
		checkDamaged(t, "undamaged", orig, entries, spans)
		for pos := range orig {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				b := bytes.Clone(orig)
				b[pos] ^= x
				checkDamaged(t, fmt.Sprintf("%s: byte %d ^ %#x", o.Compression, pos, x), b, entries, spans)
			}
		}
		// Truncations.
		for n := 0; n < len(orig); n += 7 {
			checkDamaged(t, fmt.Sprintf("truncated to %d", n), orig[:n], entries, spans)
		}
	}
}

func TestDataBlockCorruptionNamesFile(t *testing.T) {
	dir := testdir.New(t)
	path := filepath.Join(dir, "000042.sst")
	var entries []kv
	for i := 0; i < 500; i++ {
		entries = append(entries, kv{base.MakeInternalKey([]byte(fmt.Sprintf("k%05d", i)), 1, base.KindSet), []byte("value")})
	}
	writeTable(t, path, WriterOptions{BlockSize: 1024}, entries, nil)
	r := openTable(t, path, nil)
	second := r.ix.items[1].handle
	r.Close()
	b := readFile(t, path)
	b[second.Offset+second.Length/2] ^= 0x10
	writeFile(t, path, b)

	r = openTable(t, path, nil)
	defer r.Close()
	// The first block is intact; the second is not.
	if _, _, _, ok, err := r.Get(entries[0].key.UserKey, 1, false); !ok || err != nil {
		t.Fatalf("Get from intact block: %v %v", ok, err)
	}
	var probe []byte
	it := r.NewIter(IterOptions{})
	for ok := it.First(); ok; ok = it.Next() {
		probe = it.Key().Clone().UserKey
	}
	err := it.Close()
	var ce *base.CorruptionError
	if !errors.As(err, &ce) || ce.File != path || ce.Offset != int64(second.Offset) || !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("iterating a damaged table: %v", err)
	}
	next := 0 // the first key of the damaged block
	for i, e := range entries {
		if bytes.Equal(e.key.UserKey, probe) {
			next = i + 1
		}
	}
	_, _, _, _, err = r.Get(entries[next].key.UserKey, 1, false)
	if !errors.As(err, &ce) || ce.File != path || ce.Offset != int64(second.Offset) {
		t.Fatalf("Get in a damaged block: %v", err)
	}
	if !bytes.Contains([]byte(err.Error()), []byte(path)) {
		t.Fatalf("error %q does not name the file", err)
	}
}

func TestFooterErrors(t *testing.T) {
	dir := testdir.New(t)
	path := filepath.Join(dir, "f.sst")
	writeTable(t, path, WriterOptions{}, []kv{{base.MakeInternalKey([]byte("a"), 1, base.KindSet), nil}}, nil)
	orig := readFile(t, path)
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
		msg  string
	}{
		{"magic", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, "magic"},
		{"version", func(b []byte) []byte { b[len(b)-12] = 9; return b }, "format version"},
		{"checksum type", func(b []byte) []byte { b[len(b)-footerLen] = 2; return b }, "checksum type"},
		{"short", func(b []byte) []byte { return b[:10] }, "too short"},
		{"empty", func(b []byte) []byte { return nil }, "too short"},
		// The index handle's last varint byte gains a continuation bit,
		// so the zero padding after it ends the varint: the same handle,
		// in a form no writer produces (found by the corruption matrix,
		// which saw Open accept it and only Check report it).
		{"non-canonical handle", func(b []byte) []byte {
			foot := b[len(b)-footerLen:]
			_, n := block.DecodeHandle(foot[1:])
			_, m := block.DecodeHandle(foot[1+n:])
			foot[n+m] |= 0x80
			return b
		}, "canonical"},
	} {
		_, err := NewReader(&bytesFile{tc.edit(bytes.Clone(orig))}, ReaderOptions{FileName: "t.sst"})
		var ce *base.CorruptionError
		if !errors.As(err, &ce) || ce.File != "t.sst" || !bytes.Contains([]byte(ce.Msg), []byte(tc.msg)) {
			t.Fatalf("%s: got %v, want corruption mentioning %q", tc.name, err, tc.msg)
		}
	}
}
