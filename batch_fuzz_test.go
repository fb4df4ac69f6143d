package shale

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/fuzzseed"
)

// decodedEntry is one decoded batch entry.
type decodedEntry struct {
	kind       base.Kind
	key, value string
}

// decodeBatch decodes data fully; ok is false when it is malformed.
func decodeBatch(t *testing.T, data []byte) (seq base.SeqNum, entries []decodedEntry, ok bool) {
	r, ok := newBatchReader(data)
	if !ok {
		return 0, nil, false
	}
	for i := 0; i < len(data)+1; i++ {
		kind, key, value, ok, malformed := r.next()
		if malformed {
			return 0, nil, false
		}
		if !ok {
			return r.seq, entries, true
		}
		if len(key)+len(value) > len(data) {
			t.Fatalf("entry larger than the batch")
		}
		entries = append(entries, decodedEntry{kind, string(key), string(value)})
	}
	t.Fatal("decoder did not terminate")
	return 0, nil, false
}

// FuzzBatchReader feeds arbitrary bytes to the batch decoder: it must not
// panic or read past its input, and a batch that decodes must re-encode,
// through the Batch methods, to one that decodes to the same seqnum and
// entries (to the same bytes when the input used minimal varints), with a
// Len equal to its count.
func FuzzBatchReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		seq, entries, ok := decodeBatch(t, data)
		if !ok {
			return
		}
		b := newBatch()
		for _, e := range entries {
			b.add(e.kind, []byte(e.key), []byte(e.value), e.kind != base.KindDelete && e.kind != base.KindSingleDelete && e.kind != base.KindLogData)
		}
		b.setSeqNum(seq)
		if b.Len() != len(entries) {
			t.Fatalf("Len %d, %d entries", b.Len(), len(entries))
		}
		seq2, entries2, ok := decodeBatch(t, b.data)
		if !ok || seq2 != seq || !reflect.DeepEqual(entries2, entries) {
			t.Fatalf("re-encoded batch decodes to seq %d %v (%v), want seq %d %v", seq2, entries2, ok, seq, entries)
		}
		if len(b.data) == len(data) && !bytes.Equal(b.data, data) {
			t.Fatalf("same-length re-encoding differs:\n%x\n%x", data, b.data)
		}
	})
}

// TestWriteFuzzSeeds writes the seed corpora of this package's fuzz
// targets into testdata/fuzz when SHALE_WRITE_FUZZ_SEEDS=1; otherwise it
// checks that they exist.
func TestWriteFuzzSeeds(t *testing.T) {
	full := newBatch()
	full.Put([]byte("key"), []byte("value"))
	full.Delete([]byte("gone"))
	full.SingleDelete([]byte("once"))
	full.DeleteRange([]byte("a"), []byte("b"))
	full.add(base.KindMerge, []byte("m"), []byte("+1"), true)
	full.add(base.KindLogData, []byte("blob of log data"), nil, false)
	full.setSeqNum(7)
	empty := newBatch()
	empty.setSeqNum(1 << 40)
	miscount := bytes.Clone(full.data)
	miscount[8]++
	opts := testOptions(nil).EnsureDefaults().encodeOptionsFile()
	fuzzseed.Sync(t, map[string][][]any{
		"FuzzBatchReader":      {{full.data}, {empty.data}, {miscount}, {full.data[:len(full.data)-3]}},
		"FuzzParseOptionsFile": {{opts}, {[]byte("[CFOptions \"default\"]\n  compression=zstd\n  num_levels=x\n")}, {[]byte("no equals sign\n")}},
	})
}
