package sstable

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// byteCountFile counts the reads made of a file and the bytes they returned.
type byteCountFile struct {
	alignedFile
	reads, bytes atomic.Uint64
}

func (f *byteCountFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.alignedFile.ReadAt(p, off)
	f.reads.Add(1)
	f.bytes.Add(uint64(n))
	return n, err
}

// TestAsyncIterCountsEveryRead checks the counts of async iterators
// against the file: after random seeks (two-phase, some prepared reads not
// used), scans in both directions and Close, IterOptions.Stats has counted
// exactly the file's reads and the bytes they returned, prefetches and
// dropped reads included, and readahead bytes used never exceed those
// issued.
func TestAsyncIterCountsEveryRead(t *testing.T) {
	useAlignedFiles(t)
	old := fileAlignment
	fileAlignment = func(f vfs.File) int {
		if c, ok := f.(*byteCountFile); ok {
			return c.align
		}
		return old(f)
	}
	rng, _ := newRand(t)
	async := portableReader(t)
	for trial := 0; trial < 20; trial++ {
		data, _ := readaheadTable(t, rng, SnappyCompression)
		align := []int{1, 512, 4096}[rng.IntN(3)]
		f := &byteCountFile{alignedFile: alignedFile{bytesFile: bytesFile{data}, align: align, noRecord: true}}
		r, err := NewReader(f, ReaderOptions{AsyncReader: async, FileName: "t.sst",
			MaxAutoReadaheadSize: []int64{8 << 10, 64 << 10, 256 << 10}[rng.IntN(3)]})
		if err != nil {
			t.Fatal(err)
		}
		reads0, bytes0 := f.reads.Load(), f.bytes.Load()
		var st ReadStats
		o := IterOptions{Async: true, Stats: &st, ReadaheadSize: []int64{0, 0, 16 << 10}[rng.IntN(3)]}
		var group *ReadGroup
		if rng.IntN(2) == 0 {
			group = NewReadGroup(async)
			o.Group = group
		}
		it := r.NewIter(o)
		prep := it.(base.SeekPreparer)
		for op := 0; op < 200; op++ {
			switch k := rng.IntN(10); {
			case k < 3:
				key := randomUserKey(rng)
				if rng.IntN(3) == 0 {
					prep.PrepareSeekGE(randomUserKey(rng))
				} else {
					prep.PrepareSeekGE(key)
				}
				group.Submit()
				it.SeekGE(key)
			case k == 3:
				key := randomUserKey(rng)
				switch rng.IntN(3) {
				case 0:
					prep.PrepareSeekLT(key)
				case 1:
					prep.PrepareSeekLT(randomUserKey(rng))
				}
				group.Submit()
				it.SeekLT(key)
			case k == 4:
				if rng.IntN(2) == 0 {
					prep.PrepareFirst()
					it.First()
				} else {
					prep.PrepareLast()
					group.Submit()
					it.Last()
				}
			case k < 8:
				for n := rng.IntN(100); n > 0 && it.Next(); n-- {
				}
			default:
				for n := rng.IntN(20); n > 0 && it.Prev(); n-- {
				}
			}
		}
		if rng.IntN(2) == 0 {
			prep.PrepareSeekGE(randomUserKey(rng)) // in flight at Close
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		group.Close()
		desc := fmt.Sprintf("trial %d (align %d, group %v)", trial, align, group != nil)
		if got, want := st.FileReads.Load(), f.reads.Load()-reads0; got != want {
			t.Fatalf("%s: counted %d file reads, the file saw %d", desc, got, want)
		}
		if got, want := st.BytesRead.Load(), f.bytes.Load()-bytes0; got != want {
			t.Fatalf("%s: counted %d bytes read, the file returned %d", desc, got, want)
		}
		if used, issued := st.ReadaheadBytesUsed.Load(), st.ReadaheadBytesIssued.Load(); used > issued {
			t.Fatalf("%s: readahead used %d > issued %d", desc, used, issued)
		}
		r.Close()
	}
}
