package sstable

import (
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"os"
	"path/filepath"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// bigTable writes an uncompressed table of about 1.6 MiB of data blocks, so
// a direct readahead window over it is split into parts.
func bigTable(t *testing.T) []byte {
	t.Helper()
	var entries []kv
	for i := 0; i < 4000; i++ {
		entries = append(entries, kv{
			key:   base.MakeInternalKey([]byte(fmt.Sprintf("key%06d", i)), 1, base.KindSet),
			value: []byte(fmt.Sprintf("%0400d", i)),
		})
	}
	path := filepath.Join(testdir.New(t), "big.sst")
	writeTable(t, path, WriterOptions{BlockSize: 4 << 10, Compression: NoCompression}, entries, nil)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReadaheadCountersCountEveryRead checks that ReadStats count every read
// a readahead window made: the parts still in flight when an iterator is
// closed (they complete while Close drains them), and the windows of
// VerifyChecksums.
func TestReadaheadCountersCountEveryRead(t *testing.T) {
	useAlignedFiles(t)
	async := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
	defer async.Close()
	data := bigTable(t)
	f := &alignedFile{bytesFile: bytesFile{data}, align: 4096}
	var stats ReadStats
	r, err := NewReader(f, ReaderOptions{Stats: &stats, FileName: "big.sst", AsyncReader: async})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	check := func(what string) {
		t.Helper()
		reads := f.takeReads()
		var bytes uint64
		for _, rd := range reads {
			bytes += uint64(min(int64(rd.n), int64(len(data))-rd.off))
		}
		if got := stats.FileReads.Swap(0); got != uint64(len(reads)) {
			t.Errorf("%s: ReadStats.FileReads counts %d reads, the file saw %d", what, got, len(reads))
		}
		if got := stats.BytesRead.Swap(0); got != bytes {
			t.Errorf("%s: ReadStats.BytesRead counts %d bytes, the file returned %d", what, got, bytes)
		}
		stats.DirectReads.Store(0)
	}
	check("open")

	// One entry of a 2 MiB direct window: its later parts are still in
	// flight (not yet awaited) when the iterator closes.
	it := r.NewIter(IterOptions{ReadaheadSize: 2 << 20})
	if !it.First() {
		t.Fatalf("First: %v", it.Error())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	check("iterator closed with parts in flight")

	if err := r.VerifyChecksums(); err != nil {
		t.Fatal(err)
	}
	check("VerifyChecksums")
}
