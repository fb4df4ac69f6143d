package shale

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// blobWriteTestOptions are test options with values of at least 100 bytes
// separated at commit, a 64 KiB write buffer and no automatic compactions.
func blobWriteTestOptions(fs vfs.FS) *Options {
	o := testOptions(fs)
	o.Logger = discardLogger()
	o.EnableBlobFiles = true
	o.EnableBlobWriteSeparation = true
	o.MinBlobSize = 100
	o.WriteBufferSize = 64 << 10
	o.DisableAutoCompactions = true
	return o
}

// blobWriteValue is the value of key i in round r: 1000 bytes (separated)
// for even i, 20 (inline) for odd i.
func blobWriteValue(i, r int) []byte {
	n := 1000
	if i%2 == 1 {
		n = 20
	}
	v := make([]byte, n)
	for j := range v {
		v[j] = byte('a' + (i+r+j)%26)
	}
	return v
}

func blobWriteKey(i int) []byte { return []byte(fmt.Sprintf("bw%05d", i)) }

// expectBlobWriteValues reads keys [0, n) of round r through Get, MultiGet
// and an iterator.
func expectBlobWriteValues(t *testing.T, d *DB, n, r int) {
	t.Helper()
	keys := make([][]byte, n)
	for i := range n {
		keys[i] = blobWriteKey(i)
		v, err := d.Get(keys[i], nil)
		if err != nil || string(v) != string(blobWriteValue(i, r)) {
			t.Fatalf("Get(%s): %d bytes, %v", keys[i], len(v), err)
		}
	}
	vals, errs := d.MultiGet(keys, nil)
	for i := range n {
		if errs[i] != nil || string(vals[i]) != string(blobWriteValue(i, r)) {
			t.Fatalf("MultiGet(%s): %d bytes, %v", keys[i], len(vals[i]), errs[i])
		}
	}
	it := d.NewIterator(nil)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if string(it.Key()) != string(keys[i]) || string(it.Value()) != string(blobWriteValue(i, r)) {
			t.Fatalf("iterator at %d: key %s, %d bytes", i, it.Key(), len(it.Value()))
		}
		i++
	}
	if err := it.Close(); err != nil || i != n {
		t.Fatalf("iterator saw %d keys, want %d: %v", i, n, err)
	}
}

// walBytes sums the sizes of the WALs in /db.
func walBytes(t *testing.T, fs vfs.FS) int64 {
	t.Helper()
	var n int64
	for _, name := range listNames(t, fs, "/db") {
		if ft, _, ok := base.ParseFilename(name); ok && ft == base.FileTypeLog {
			n += int64(len(readFile(t, fs, "/db/"+name)))
		}
	}
	return n
}

// currentWALBytes returns the bytes of records in the DB's current WAL
// (its zeros written ahead not counted).
func currentWALBytes(t *testing.T, fs vfs.FS, d *DB) int64 {
	t.Helper()
	d.mu.Lock()
	num := d.mu.log.num
	d.mu.Unlock()
	return int64(len(bytes.TrimRight(readFile(t, fs, "/db/"+base.MakeFilename(base.FileTypeLog, num)), "\x00")))
}

// TestBlobWriteSeparationWritesValuesOnce: with EnableBlobWriteSeparation
// the large values go to blob files at commit and the WAL holds their
// indexes (it stays far smaller than the values); reads find them in the
// memtable, in blob files not yet in any version; the flush adds those
// files to the version with tables of indexes, and values read back the
// same before and after.
func TestBlobWriteSeparationWritesValuesOnce(t *testing.T) {
	fs := vfs.NewMem()
	d, err := Open("/db", blobWriteTestOptions(fs))
	must(t, err)
	defer func() { must(t, d.Close()) }()
	const n = 40
	for i := range n {
		must(t, d.Put(blobWriteKey(i), blobWriteValue(i, 0), nil))
	}
	if w := walBytes(t, fs); w > n/2*1000/4 {
		t.Errorf("WAL holds %d bytes for %d values of 1000 bytes: values not separated", w, n/2)
	}
	onDisk := blobFileNums(t, fs)
	if len(onDisk) == 0 {
		t.Fatal("no blob file written at commit")
	}
	if m := d.Metrics(); m.Blob.Files != 0 {
		t.Fatalf("blob files in the version before any flush: %d", m.Blob.Files)
	}
	expectBlobWriteValues(t, d, n, 0)
	must(t, d.Flush())
	v := d.versions.Current()
	var inVersion []base.FileNum
	for _, b := range v.BlobFiles {
		inVersion = append(inVersion, b.FileNum)
	}
	v.Unref()
	for _, num := range onDisk {
		if !slices.Contains(inVersion, num) {
			t.Errorf("blob file %s written at commit is not in the version after the flush (%v)", num, inVersion)
		}
	}
	if got := checkBlobReferences(t, d); got != n/2 {
		t.Errorf("%d blob indexes in tables, want %d", got, n/2)
	}
	expectBlobWriteValues(t, d, n, 0)
}

// TestBlobWriteSeparationFlushRecordsGarbage: values overwritten while in
// one memtable are garbage of its blob file once flushed (the flush's
// tables reference only the newest), and a file whose every value was
// overwritten there is deleted by the next edit.
func TestBlobWriteSeparationFlushRecordsGarbage(t *testing.T) {
	fs := vfs.NewMem()
	d, err := Open("/db", blobWriteTestOptions(fs))
	must(t, err)
	defer func() { must(t, d.Close()) }()
	const n = 20
	for r := range 3 {
		for i := range n {
			must(t, d.Put(blobWriteKey(i), blobWriteValue(i, r), nil))
		}
	}
	must(t, d.Flush())
	v := d.versions.Current()
	var total, garbage uint64
	for _, b := range v.BlobFiles {
		total += b.TotalCount
		garbage += b.GarbageCount
	}
	v.Unref()
	if total != 3*n/2 || garbage != 2*n/2 {
		t.Errorf("blob files hold %d values with %d garbage, want %d with %d", total, garbage, 3*n/2, 2*n/2)
	}
	checkBlobReferences(t, d)
	expectBlobWriteValues(t, d, n, 2)
	// A memtable whose values are overwritten within it: its first file
	// holds only garbage once flushed, is never added to the version,
	// and leaves the disk once the memtable is released.
	must(t, d.SetOptions(map[string]string{"blob_file_size": "4096"})) // files of ~4 values
	for r := 3; r < 5; r++ {
		for i := range n {
			must(t, d.Put(blobWriteKey(i), blobWriteValue(i, r), nil))
		}
	}
	onDisk := blobFileNums(t, fs)
	d.mu.Lock()
	memFiles := len(d.mu.mem.mutable.blobs.files)
	d.mu.Unlock()
	must(t, d.Flush())
	d.deleteObsoleteFiles(false)
	v = d.versions.Current()
	for _, num := range blobFileNums(t, fs) {
		if v.BlobFile(num) == nil {
			t.Errorf("blob file %s on disk after the flush is in no version", num)
		}
	}
	gone := 0
	for _, num := range onDisk {
		if b := v.BlobFile(num); b != nil && b.GarbageCount == b.TotalCount {
			t.Errorf("blob file %s holding only garbage was added to the version", num)
		} else if !slices.Contains(blobFileNums(t, fs), num) {
			gone++
		}
	}
	v.Unref()
	if gone == 0 || gone >= memFiles {
		t.Errorf("%d of the memtable's %d blob files left the disk: want its first ones (overwritten values only)", gone, memFiles)
	}
	must(t, d.CompactRange(nil, nil))
	d.deleteObsoleteFiles(false)
	checkBlobReferences(t, d)
	expectBlobWriteValues(t, d, n, 4)
}

// TestBlobWriteSeparationRecovery: values in blob files at commit survive
// Close and Open (the WAL is replayed with them inline, flushed, and the
// old files removed), a process crash (everything handed to the OS) and a
// power loss after synced writes; nothing is lost and no file leaks.
func TestBlobWriteSeparationRecovery(t *testing.T) {
	for _, how := range []string{"close", "crash", "power-loss-synced"} {
		t.Run(how, func(t *testing.T) {
			mem := vfs.NewMem()
			opts := blobWriteTestOptions(mem)
			d, err := Open("/db", opts)
			must(t, err)
			wo := &WriteOptions{Sync: how == "power-loss-synced"}
			const n = 60
			for i := range n {
				must(t, d.Put(blobWriteKey(i), blobWriteValue(i, 0), wo))
			}
			fs := mem
			switch how {
			case "close":
				must(t, d.Close())
			case "crash":
				fs = processCrashCopy(t, mem, "/db")
				defer d.Close()
			case "power-loss-synced":
				fs = mem.CrashClone()
				defer d.Close()
			}
			ro := *opts
			ro.FS = fs
			d2, err := Open("/db", &ro)
			must(t, err)
			expectBlobWriteValues(t, d2, n, 0)
			if m := d2.Metrics(); m.Recovery.DroppedRecords != 0 {
				t.Errorf("recovery dropped %d records", m.Recovery.DroppedRecords)
			}
			checkBlobReferences(t, d2)
			// Every blob file on disk is in the version: the ones the old
			// WAL pointed into were removed after the recovery's flush.
			v := d2.versions.Current()
			for _, num := range blobFileNums(t, fs) {
				if v.BlobFile(num) == nil {
					t.Errorf("blob file %s on disk after Open is not in the version", num)
				}
			}
			v.Unref()
			// Writes go on, into new blob files.
			for i := range n {
				must(t, d2.Put(blobWriteKey(i), blobWriteValue(i, 1), nil))
			}
			expectBlobWriteValues(t, d2, n, 1)
			must(t, d2.Close())
		})
	}
}

// newestMemBlobFile returns the number and path of the newest blob file in
// /db that no version holds (the active one of the memtable).
func newestMemBlobFile(t *testing.T, fs vfs.FS, d *DB) (base.FileNum, string) {
	t.Helper()
	v := d.versions.Current()
	defer v.Unref()
	var newest base.FileNum
	for _, num := range blobFileNums(t, fs) {
		if v.BlobFile(num) == nil && num > newest {
			newest = num
		}
	}
	if newest == 0 {
		t.Fatal("no memtable blob file on disk")
	}
	return newest, "/db/" + base.MakeFilename(base.FileTypeBlob, newest)
}

// flushFinishesMemBlobFile flushes d and checks that the memtable blob
// file num (at name) is then in the version, as long on disk as the
// MANIFEST says: cut to its records and footer.
func flushFinishesMemBlobFile(t *testing.T, fs vfs.FS, d *DB, num base.FileNum, name string) {
	t.Helper()
	must(t, d.Flush())
	v := d.versions.Current()
	meta := v.BlobFile(num)
	v.Unref()
	if meta == nil {
		t.Fatalf("blob file %s not in the version after the flush", num)
	}
	if got := int64(len(readFile(t, fs, name))); got != int64(meta.Size) {
		t.Errorf("finished blob file is %d bytes, the MANIFEST says %d: zeros written ahead were not cut off", got, meta.Size)
	}
}

// TestBlobWriteSeparationLostValueEndsWAL: a value whose record is not in
// its blob file (cut off, or ending in zeros, as a power loss leaves
// unsynced bytes) ends the WAL there, as a torn record does: Open recovers
// the writes before it and reports the loss. A record whose end is there
// and whose bytes are wrong (a flip, or zeros inside it) is corruption:
// Open refuses, and Check reports it.
func TestBlobWriteSeparationLostValueEndsWAL(t *testing.T) {
	const n, cut = 40, 30 // keys; key cut's value (even) is the first lost
	for _, damage := range []string{"truncate", "zeros", "zero-sector", "flip"} {
		t.Run(damage, func(t *testing.T) {
			mem := vfs.NewMem()
			opts := blobWriteTestOptions(mem)
			d, err := Open("/db", opts)
			must(t, err)
			for i := range n {
				must(t, d.Put(blobWriteKey(i), blobWriteValue(i, 0), nil))
			}
			_, name := newestMemBlobFile(t, mem, d)
			must(t, d.Close())
			data := readFile(t, mem, name)
			// The record of key cut: find its key in the file.
			at := -1
			for i := range len(data) - 7 {
				if string(data[i:i+7]) == string(blobWriteKey(cut)) {
					at = i
					break
				}
			}
			if at < 0 {
				t.Fatal("key not found in its blob file")
			}
			switch damage {
			case "truncate":
				data = data[:at]
			case "zeros":
				clear(data[at:])
			case "zero-sector":
				// Zeros inside the record, its end written: damage (a
				// value may hold zeros; a tear leaves the end unwritten).
				s := (at + 100) / 512 * 512
				clear(data[s : s+512])
			case "flip":
				data[at+100] ^= 0x40
			}
			writeFile(t, mem, name, data)
			d2, err := Open("/db", opts)
			if damage == "flip" || damage == "zero-sector" {
				if !errors.Is(err, ErrCorruption) {
					t.Fatalf("Open with a damaged blob record: %v", err)
				}
				rep, err := Check("/db", &Options{FS: mem})
				must(t, err)
				if rep.OK() {
					t.Errorf("Check found no damage:\n%s", rep)
				}
				return
			}
			must(t, err)
			defer d2.Close()
			m := d2.Metrics()
			if m.Recovery.DroppedRecords == 0 {
				t.Error("no loss reported")
			}
			for i := range n {
				v, err := d2.Get(blobWriteKey(i), nil)
				switch {
				case i < cut && (err != nil || string(v) != string(blobWriteValue(i, 0))):
					t.Fatalf("key %d before the lost value: %d bytes, %v", i, len(v), err)
				case i >= cut && !errors.Is(err, ErrNotFound):
					t.Fatalf("key %d at or after the lost value: %d bytes, %v", i, len(v), err)
				}
			}
		})
	}
}

// TestBlobWriteSeparationCheckpoint: a checkpoint taken while memtables
// hold blob indexes carries their blob files with the WALs, and opens to
// every value.
func TestBlobWriteSeparationCheckpoint(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobWriteTestOptions(mem)
	d, err := Open("/db", opts)
	must(t, err)
	defer func() { must(t, d.Close()) }()
	const n = 50
	for i := range n {
		must(t, d.Put(blobWriteKey(i), blobWriteValue(i, 0), nil))
	}
	must(t, d.Checkpoint("/cp"))
	// Writes after the checkpoint are not in it.
	must(t, d.Put(blobWriteKey(n), blobWriteValue(n, 0), nil))
	co := *opts
	cp, err := Open("/cp", &co)
	must(t, err)
	defer func() { must(t, cp.Close()) }()
	expectBlobWriteValues(t, cp, n, 0)
}

// TestBlobWriteSeparationSetOptions: turning separation on and off while
// open changes where new values go, never what reads return.
func TestBlobWriteSeparationSetOptions(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobWriteTestOptions(mem)
	opts.EnableBlobWriteSeparation = false
	d, err := Open("/db", opts)
	must(t, err)
	defer func() { must(t, d.Close()) }()
	const n = 30
	for r := range 4 {
		must(t, d.SetOptions(map[string]string{"enable_blob_write_separation": fmt.Sprint(r%2 == 1)}))
		before := currentWALBytes(t, mem, d)
		for i := range n {
			must(t, d.Put(blobWriteKey(i), blobWriteValue(i, r), nil))
		}
		grew := currentWALBytes(t, mem, d) - before
		if separated := grew < n/2*1000/2; separated != (r%2 == 1) {
			t.Errorf("round %d: WAL grew %d bytes with separation %v", r, grew, r%2 == 1)
		}
		expectBlobWriteValues(t, d, n, r)
		if r == 1 {
			must(t, d.Flush())
		}
	}
	must(t, d.Flush())
	checkBlobReferences(t, d)
	expectBlobWriteValues(t, d, n, 3)
}

// processCrashCopy returns a MemFS holding dir as a crash of the process
// leaves it now: every byte written, synced or not.
func processCrashCopy(t *testing.T, fs vfs.FS, dir string) *vfs.MemFS {
	t.Helper()
	out := vfs.NewMem()
	must(t, out.MkdirAll(dir, 0o755))
	for _, name := range listNames(t, fs, dir) {
		if name == "LOCK" {
			continue
		}
		writeFile(t, out, out.PathJoin(dir, name), readFile(t, fs, fs.PathJoin(dir, name)))
	}
	return out
}

// TestBlobGCReadsWriteOrderFilesOnce: garbage collection of a blob file
// written at commit, whose values lie in write order rather than key
// order, reads it about once: a fixed compaction readahead window per
// value (BlobCompactionReadaheadSize) would read it many times over.
func TestBlobGCReadsWriteOrderFilesOnce(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobWriteTestOptions(mem)
	opts.WriteBufferSize = 1 << 20
	opts.BlobCompactionReadaheadSize = 64 << 10
	setBlobGCTestOptions(opts)
	d, err := Open("/db", opts)
	must(t, err)
	defer func() { must(t, d.Close()) }()
	const n = 400
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(n) {
		must(t, d.Put(blobWriteKey(2*i), blobWriteValue(2*i, 0), nil))
	}
	must(t, d.Flush())
	// A second table over the same range: the compaction is not a move.
	must(t, d.Put(blobWriteKey(1), blobWriteValue(1, 0), nil))
	must(t, d.Put(blobWriteKey(2*n-1), blobWriteValue(2*n-1, 0), nil))
	must(t, d.Flush())
	var size uint64
	v := d.versions.Current()
	for _, b := range v.BlobFiles {
		size += b.Size
	}
	v.Unref()
	before := d.Metrics().Blob
	must(t, d.CompactRange(nil, nil))
	after := d.Metrics().Blob
	if after.Relocated == before.Relocated {
		t.Fatal("nothing relocated")
	}
	read := after.BytesRead - before.BytesRead
	t.Logf("blob files of %d bytes; GC read %d bytes", size, read)
	if read > 2*size {
		t.Errorf("GC read %d bytes of blob files holding %d", read, size)
	}
	expectBlobWriteValues2(t, d, n)
}

// expectBlobWriteValues2 reads keys 0, 2, ..., 2n-2 of round 0.
func expectBlobWriteValues2(t *testing.T, d *DB, n int) {
	t.Helper()
	for i := range n {
		v, err := d.Get(blobWriteKey(2*i), nil)
		if err != nil || string(v) != string(blobWriteValue(2*i, 0)) {
			t.Fatalf("Get(%s): %d bytes, %v", blobWriteKey(2*i), len(v), err)
		}
	}
}

// putSynced puts key i's value unsynced (a synced group keeps its values
// inline) and then makes it durable with a synced write of a short marker
// value: the group syncs the memtable's blob file, holding the value,
// beside its WAL.
func putSynced(d *DB, key, value []byte) error {
	if err := d.Put(key, value, nil); err != nil {
		return err
	}
	return d.Put([]byte("~synced"), []byte("s"), &WriteOptions{Sync: true})
}

// TestBlobWriteSeparationSyncedWritesStayInline: a synced write keeps its
// values in the WAL (one file to sync) and creates no blob file; a synced
// write after unsynced separated ones syncs their blob file, so they
// survive a power loss; the flush separates the inline values, and every
// value reads back.
func TestBlobWriteSeparationSyncedWritesStayInline(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobWriteTestOptions(mem)
	d, err := Open("/db", opts)
	must(t, err)
	defer func() { must(t, d.Close()) }()
	synced := &WriteOptions{Sync: true}
	must(t, d.Put(blobWriteKey(0), blobWriteValue(0, 0), synced))
	if got := blobFileNums(t, mem); len(got) != 0 {
		t.Fatalf("a synced write created blob files %v", got)
	}
	must(t, d.Put(blobWriteKey(2), blobWriteValue(2, 0), nil))
	num, name := newestMemBlobFile(t, mem, d)
	must(t, d.Put(blobWriteKey(4), blobWriteValue(4, 0), synced))
	if n2, _ := newestMemBlobFile(t, mem, d); n2 != num {
		t.Fatalf("blob file %s after the second synced write, want only %s", n2, num)
	}
	if !bytes.Contains(readFile(t, mem, name), blobWriteValue(2, 0)) || bytes.Contains(readFile(t, mem, name), blobWriteValue(4, 0)) {
		t.Fatal("the memtable's blob file does not hold exactly the unsynced value")
	}
	// Power loss now: all three were made durable by the synced writes.
	co := *opts
	co.FS = mem.CrashClone()
	d2, err := Open("/db", &co)
	must(t, err)
	expectBlobWriteValues2(t, d2, 3)
	must(t, d2.Close())
	flushFinishesMemBlobFile(t, mem, d, num, name)
	expectBlobWriteValues2(t, d, 3)
	if n := checkBlobReferences(t, d); n != 3 {
		t.Fatalf("%d blob indexes in the tables after the flush, want 3 (inline values separated by the flush)", n)
	}
}

// TestBlobWriteSeparationFaults fails a write, a torn write or a sync of
// the memtable's blob file under Puts (each followed by a synced write for
// the sync): the
// write fails and the DB goes read-only, keeping every acknowledged value
// readable; after Resume the flush writes the values of the failed file
// anew (it is never finished and added to the version), and every
// acknowledged value reads back, then and after a reopen.
func TestBlobWriteSeparationFaults(t *testing.T) {
	for _, c := range []struct {
		name string
		rule errorfs.Rule
		sync bool
	}{
		{"write", errorfs.Rule{Op: errorfs.OpWrite, PathContains: ".blob"}, false},
		{"torn-write-enospc", errorfs.Rule{Op: errorfs.OpWrite, PathContains: ".blob", ShortWrite: true, NoSpace: true}, false},
		{"sync", errorfs.Rule{Op: errorfs.OpSync, PathContains: ".blob"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := vfs.NewMem()
			ffs, opts, d := openFaultDB(t, mem, func(o *Options) {
				bo := blobWriteTestOptions(o.FS)
				*o = *bo
			})
			defer d.Close()
			put := func(i int) error {
				if c.sync {
					return putSynced(d, blobWriteKey(i), blobWriteValue(i, 0))
				}
				return d.Put(blobWriteKey(i), blobWriteValue(i, 0), nil)
			}
			const n = 30
			for i := range n {
				must(t, put(i))
			}
			ffs.AddRule(c.rule)
			acked := n
			for i := n; i < 2*n; i++ {
				if err := put(i); err != nil {
					if !errors.Is(err, ErrReadOnly) {
						t.Fatalf("Put with a failing blob %s: %v", c.name, err)
					}
					break
				}
				acked = i + 1
			}
			if ffs.Injected() == 0 {
				t.Fatal("no fault injected")
			}
			if acked == 2*n {
				t.Fatal("every Put succeeded under the fault")
			}
			ffs.ClearRules()
			expectBlobWriteValuesUpTo(t, d, acked)
			must(t, d.Resume())
			must(t, d.Flush())
			expectBlobWriteValuesUpTo(t, d, acked)
			checkBlobReferences(t, d)
			must(t, d.Close())
			d2, err := Open("/db", opts)
			must(t, err)
			expectBlobWriteValuesUpTo(t, d2, acked)
			must(t, d2.Close())
		})
	}
}

// expectBlobWriteValuesUpTo reads keys [0, n) of round 0 with Get.
func expectBlobWriteValuesUpTo(t *testing.T, d *DB, n int) {
	t.Helper()
	for i := range n {
		v, err := d.Get(blobWriteKey(i), nil)
		if err != nil || string(v) != string(blobWriteValue(i, 0)) {
			t.Fatalf("Get(%s): %d bytes, %v", blobWriteKey(i), len(v), err)
		}
	}
}

// TestBlobWriteSeparationCheckpointRacesNewFile: a commit between the
// checkpoint's listing of the WALs and its reading of the current WAL's
// size starts a memtable blob file that a copied WAL record points into;
// the checkpoint carries that file and opens to every value.
func TestBlobWriteSeparationCheckpointRacesNewFile(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobWriteTestOptions(mem)
	d, err := Open("/db", opts)
	must(t, err)
	defer func() { must(t, d.Close()) }()
	for i := 1; i < 10; i += 2 { // inline values: no memtable blob file yet
		must(t, d.Put(blobWriteKey(i), blobWriteValue(i, 0), nil))
	}
	testHookCaptureBeforeWALSize = func() {
		testHookCaptureBeforeWALSize = nil
		must(t, d.Put(blobWriteKey(0), blobWriteValue(0, 0), nil))
	}
	defer func() { testHookCaptureBeforeWALSize = nil }()
	must(t, d.Checkpoint("/cp"))
	co := *opts
	cp, err := Open("/cp", &co)
	must(t, err)
	defer func() { must(t, cp.Close()) }()
	v, err := cp.Get(blobWriteKey(0), nil)
	if err != nil || string(v) != string(blobWriteValue(0, 0)) {
		t.Fatalf("value written during the capture: %d bytes, %v", len(v), err)
	}
}

// TestBlobWriteSeparationZeroFillsForSyncedWrites: synced writes extend the
// memtable's blob file with zeros ahead of its records (so that their
// fdatasync writes data only); a power loss leaves a file whose zeros
// recovery reads past, and the flush cuts them off: the finished file ends
// in its footer.
func TestBlobWriteSeparationZeroFillsForSyncedWrites(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobWriteTestOptions(mem)
	d, err := Open("/db", opts)
	must(t, err)
	defer func() { must(t, d.Close()) }()
	const n = 40
	for i := range n {
		must(t, putSynced(d, blobWriteKey(i), blobWriteValue(i, 0)))
	}
	num, name := newestMemBlobFile(t, mem, d)
	data := readFile(t, mem, name)
	records := len(bytes.TrimRight(data, "\x00"))
	if len(data) <= records {
		t.Fatalf("blob file of %d bytes holds no zeros after its %d bytes of records", len(data), records)
	}
	// Power loss now: every synced value is there.
	co := *opts
	co.FS = mem.CrashClone()
	d2, err := Open("/db", &co)
	must(t, err)
	expectBlobWriteValuesUpTo(t, d2, n)
	must(t, d2.Close())
	flushFinishesMemBlobFile(t, mem, d, num, name)
	expectBlobWriteValuesUpTo(t, d, n)
	checkBlobReferences(t, d)
}

// partialZerosFS makes blob files that cannot be preallocated (ENOSPC) and
// whose WriteZeros writes half its zeros and then fails with ENOSPC, as a
// chunked write of zeros does on a disk that fills.
type partialZerosFS struct{ vfs.FS }

type partialZerosFile struct{ vfs.File }

func (fs partialZerosFS) Create(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Create(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".blob") {
		return f, err
	}
	return &partialZerosFile{f}, nil
}

func (f *partialZerosFile) Preallocate(off, n int64) error { return syscall.ENOSPC }

func (f *partialZerosFile) WriteZeros(off, n int64) error {
	if err := vfs.WriteZeros(f.File, off, n/2); err != nil {
		return err
	}
	return syscall.ENOSPC
}

// TestBlobWriteSeparationPartialZeroFill: zeros written ahead for synced
// writes that fail part way still extend the file; with nothing
// preallocated either, the finished file must still be cut to its records
// and footer, and every value read back.
func TestBlobWriteSeparationPartialZeroFill(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobWriteTestOptions(partialZerosFS{mem})
	d, err := Open("/db", opts)
	must(t, err)
	defer func() { must(t, d.Close()) }()
	const n = 10
	for i := range n {
		must(t, putSynced(d, blobWriteKey(i), blobWriteValue(i, 0)))
	}
	num, name := newestMemBlobFile(t, mem, d)
	flushFinishesMemBlobFile(t, mem, d, num, name)
	expectBlobWriteValuesUpTo(t, d, n)
}

// TestBlobWriteSeparationFlipBesideZerosIsDamage: a bit flip in a synced
// value that holds a run of zeros is damage (Open refuses), not a torn
// record that would silently end the WAL and drop the acknowledged synced
// writes after it.
func TestBlobWriteSeparationFlipBesideZerosIsDamage(t *testing.T) {
	const n, cut = 20, 10
	val := func(i int) []byte {
		v := make([]byte, 3000)
		for j := range v {
			v[j] = byte('a' + (i+j)%26)
		}
		clear(v[1000:2200]) // at least one whole 512-byte sector
		return v
	}
	mem := vfs.NewMem()
	opts := blobWriteTestOptions(mem)
	d, err := Open("/db", opts)
	must(t, err)
	for i := range n {
		must(t, putSynced(d, blobWriteKey(i), val(i)))
	}
	_, name := newestMemBlobFile(t, mem, d)
	must(t, d.Close())
	data := readFile(t, mem, name)
	at := strings.Index(string(data), string(blobWriteKey(cut)))
	if at < 0 {
		t.Fatal("key not found in its blob file")
	}
	data[at+100] ^= 0x40
	writeFile(t, mem, name, data)
	d2, err := Open("/db", opts)
	if errors.Is(err, ErrCorruption) {
		return
	}
	must(t, err)
	defer d2.Close()
	lost := 0
	for i := range n {
		if _, err := d2.Get(blobWriteKey(i), nil); errors.Is(err, ErrNotFound) {
			lost++
		}
	}
	t.Errorf("Open succeeded after a bit flip in a synced blob record: %d of %d acknowledged synced writes gone", lost, n)
}

// TestBlobWriteSeparationZeroHeaderIsLost: a memtable blob file whose
// header reads as zeros (its first write lost to a power loss, the file's
// size kept) ends the WAL at its first value, as a torn record does.
func TestBlobWriteSeparationZeroHeaderIsLost(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobWriteTestOptions(mem)
	d, err := Open("/db", opts)
	must(t, err)
	for i := 1; i < 10; i += 2 { // inline values first
		must(t, d.Put(blobWriteKey(i), blobWriteValue(i, 0), nil))
	}
	for i := 10; i < 20; i++ {
		must(t, d.Put(blobWriteKey(i), blobWriteValue(i, 0), nil))
	}
	_, name := newestMemBlobFile(t, mem, d)
	must(t, d.Close())
	data := readFile(t, mem, name)
	clear(data)
	writeFile(t, mem, name, data)
	d2, err := Open("/db", opts)
	must(t, err)
	defer d2.Close()
	for i := 1; i < 10; i += 2 {
		if v, err := d2.Get(blobWriteKey(i), nil); err != nil || string(v) != string(blobWriteValue(i, 0)) {
			t.Fatalf("Get(%s) before the lost values: %d bytes, %v", blobWriteKey(i), len(v), err)
		}
	}
	if _, err := d2.Get(blobWriteKey(10), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a lost value: %v", err)
	}
	if d2.Metrics().Recovery.DroppedRecords == 0 {
		t.Error("no loss reported")
	}
}
