package shale_test

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/vfs"
)

// The examples below run with go test and check their output. Most keep the
// database in memory (vfs.NewMem) so that they leave nothing behind; ExampleOpen
// uses a temporary directory of the operating system, emptied by DestroyDB after
// Close and then removed (os.RemoveAll of a non-empty directory fails under
// Wine, where the Windows tests run).

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "shale-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(dir) // empty once DestroyDB below has run
	dbDir := filepath.Join(dir, "db")

	// nil Options: the defaults, and the database is created if missing.
	db, err := shale.Open(dbDir, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := db.Put([]byte("hello"), []byte("world"), nil); err != nil {
		log.Fatal(err)
	}
	v, err := db.Get([]byte("hello"), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("hello = %s\n", v)
	_, err = db.Get([]byte("absent"), nil)
	fmt.Println("absent is not found:", errors.Is(err, shale.ErrNotFound))
	if err := db.Close(); err != nil {
		log.Fatal(err)
	}
	// DestroyDB removes the database's files, then its directory.
	if err := shale.DestroyDB(dbDir, nil); err != nil {
		log.Fatal(err)
	}
	// Output:
	// hello = world
	// absent is not found: true
}

func ExampleDB_Write() {
	db, err := shale.Open("/db", &shale.Options{FS: vfs.NewMem(), CreateIfMissing: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := db.Put([]byte("balance/alice"), []byte("100"), nil); err != nil {
		log.Fatal(err)
	}

	// A batch is applied atomically: a reader sees all of it or none of it,
	// and after a crash it is recovered whole or not at all.
	b := db.NewBatch()
	b.Put([]byte("balance/alice"), []byte("70"))
	b.Put([]byte("balance/bob"), []byte("30"))
	b.Delete([]byte("pending/alice-to-bob"))
	if err := db.Write(b, &shale.WriteOptions{Sync: true}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("entries in the batch:", b.Len())

	it := db.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("%s = %s\n", it.Key(), it.Value())
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// entries in the batch: 3
	// balance/alice = 70
	// balance/bob = 30
}

func ExampleDB_NewSnapshot() {
	db, err := shale.Open("/db", &shale.Options{FS: vfs.NewMem(), CreateIfMissing: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := db.Put([]byte("config"), []byte("v1"), nil); err != nil {
		log.Fatal(err)
	}

	snap := db.NewSnapshot()
	defer snap.Release() // a snapshot keeps what it sees from compactions until released

	if err := db.Put([]byte("config"), []byte("v2"), nil); err != nil {
		log.Fatal(err)
	}
	old, err := db.Get([]byte("config"), &shale.ReadOptions{Snapshot: snap})
	if err != nil {
		log.Fatal(err)
	}
	cur, err := db.Get([]byte("config"), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("at the snapshot: %s, now: %s\n", old, cur)
	// Output:
	// at the snapshot: v1, now: v2
}

func ExampleDB_NewIterator() {
	db, err := shale.Open("/db", &shale.Options{FS: vfs.NewMem(), CreateIfMissing: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"apple", "banana", "cherry", "date", "elderberry"} {
		if err := db.Put([]byte(k), []byte(fmt.Sprint(len(k))), nil); err != nil {
			log.Fatal(err)
		}
	}

	// Bounds: LowerBound is inclusive, UpperBound exclusive. The iterator
	// never reads past them, so they also save IO.
	it := db.NewIterator(&shale.ReadOptions{LowerBound: []byte("b"), UpperBound: []byte("d")})
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("%s has %s letters\n", it.Key(), it.Value())
	}
	// Backwards, from the last key below the upper bound.
	for ok := it.Last(); ok; ok = it.Prev() {
		fmt.Printf("back: %s\n", it.Key())
	}
	// Close returns the error that stopped the iteration, if any: check it.
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// banana has 6 letters
	// cherry has 6 letters
	// back: cherry
	// back: banana
}

func ExampleDB_MultiGet() {
	db, err := shale.Open("/db", &shale.Options{FS: vfs.NewMem(), CreateIfMissing: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"k1", "k2", "k3"} {
		if err := db.Put([]byte(k), []byte("value of "+k), nil); err != nil {
			log.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil { // the reads below then come from a table
		log.Fatal(err)
	}

	// With AsyncIO, MultiGet reads the tables of every level at once (a zero
	// ReadOptions and NewReadOptions() agree; MultiGetOneLevelAtATime limits it).
	ro := &shale.ReadOptions{AsyncIO: true}
	keys := [][]byte{[]byte("k3"), []byte("missing"), []byte("k1")}
	values, errs := db.MultiGet(keys, ro)
	for i, k := range keys {
		switch {
		case errors.Is(errs[i], shale.ErrNotFound):
			fmt.Printf("%s: not found\n", k)
		case errs[i] != nil:
			log.Fatal(errs[i])
		default:
			fmt.Printf("%s: %s\n", k, values[i])
		}
	}
	// Output:
	// k3: value of k3
	// missing: not found
	// k1: value of k1
}

func Example_blobFiles() {
	db, err := shale.Open("/db", &shale.Options{
		FS:              vfs.NewMem(),
		CreateIfMissing: true,
		EnableBlobFiles: true, // values of at least MinBlobSize bytes go to blob files
		MinBlobSize:     1024,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	large := bytes.Repeat([]byte("x"), 64<<10)
	if err := db.Put([]byte("large"), large, nil); err != nil {
		log.Fatal(err)
	}
	if err := db.Put([]byte("small"), []byte("inline"), nil); err != nil {
		log.Fatal(err)
	}
	// Values are separated when a flush (or compaction) writes them out.
	if err := db.Flush(); err != nil {
		log.Fatal(err)
	}
	m := db.Metrics()
	fmt.Println("blob files:", m.Blob.Files)
	v, err := db.Get([]byte("large"), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("large value read back:", bytes.Equal(v, large))
	n, _ := db.GetIntProperty("rocksdb.num-blob-files")
	fmt.Println("rocksdb.num-blob-files:", n)
	// Output:
	// blob files: 1
	// large value read back: true
	// rocksdb.num-blob-files: 1
}

func ExampleDB_Merge() {
	db, err := shale.Open("/db", &shale.Options{
		FS:              vfs.NewMem(),
		CreateIfMissing: true,
		MergeOperator:   shale.StringAppendOperator(','),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	// A merge records an operand without reading the value; reads and
	// compactions apply the operands, oldest first.
	if err := db.Put([]byte("tags"), []byte("red"), nil); err != nil {
		log.Fatal(err)
	}
	for _, tag := range []string{"green", "blue"} {
		if err := db.Merge([]byte("tags"), []byte(tag), nil); err != nil {
			log.Fatal(err)
		}
	}
	v, err := db.Get([]byte("tags"), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("tags = %s\n", v)
	// Output:
	// tags = red,green,blue
}

func ExampleOpenTransactionDB() {
	tdb, err := shale.OpenTransactionDB("/db", &shale.Options{FS: vfs.NewMem(), CreateIfMissing: true}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer tdb.Close()
	if err := tdb.Put([]byte("stock/widget"), []byte("5"), nil); err != nil {
		log.Fatal(err)
	}

	// A pessimistic transaction: GetForUpdate locks the key until Commit or
	// Rollback, so no other writer can change it in between.
	txn := tdb.BeginTransaction(nil, nil)
	stock, err := txn.GetForUpdate(nil, []byte("stock/widget"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("stock before: %s\n", stock)
	if err := txn.Put([]byte("stock/widget"), []byte("4")); err != nil {
		log.Fatal(err)
	}
	if err := txn.Put([]byte("order/1"), []byte("widget")); err != nil {
		log.Fatal(err)
	}
	// The transaction reads its own writes; others see them at Commit.
	mine, _ := txn.Get(nil, []byte("stock/widget"))
	theirs, _ := tdb.Get([]byte("stock/widget"), nil)
	fmt.Printf("inside: %s, outside: %s\n", mine, theirs)
	if err := txn.Commit(); err != nil {
		log.Fatal(err)
	}
	after, err := tdb.Get([]byte("stock/widget"), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("stock after commit: %s\n", after)
	// Output:
	// stock before: 5
	// inside: 4, outside: 5
	// stock after commit: 4
}

func ExampleDB_Checkpoint() {
	fs := vfs.NewMem()
	db, err := shale.Open("/db", &shale.Options{FS: fs, CreateIfMissing: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := db.Put([]byte("k"), []byte("at checkpoint time"), nil); err != nil {
		log.Fatal(err)
	}
	// The checkpoint directory must not exist; tables are hard-linked where
	// the file system can, the rest copied.
	if err := db.Checkpoint("/checkpoint"); err != nil {
		log.Fatal(err)
	}
	if err := db.Put([]byte("k"), []byte("later"), nil); err != nil {
		log.Fatal(err)
	}

	// A checkpoint is a database of its own: open it like any other.
	cp, err := shale.Open("/checkpoint", &shale.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	defer cp.Close()
	v, err := cp.Get([]byte("k"), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("checkpoint: %s\n", v)
	// Output:
	// checkpoint: at checkpoint time
}

func ExampleOpenBackupEngine() {
	fs := vfs.NewMem()
	db, err := shale.Open("/db", &shale.Options{FS: fs, CreateIfMissing: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	engine, err := shale.OpenBackupEngine("/backups", &shale.BackupOptions{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	defer engine.Close()

	for i, v := range []string{"first", "second"} {
		if err := db.Put([]byte("k"), []byte(v), nil); err != nil {
			log.Fatal(err)
		}
		// Each backup copies only the table files the earlier ones lack.
		if err := engine.CreateNewBackup(db); err != nil {
			log.Fatal(err)
		}
		fmt.Println("made backup", i+1)
	}
	for _, info := range engine.GetBackupInfo() {
		if err := engine.VerifyBackup(info.ID); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("backup %d verified\n", info.ID)
	}

	// Restore the first backup into a new directory and open it.
	if err := engine.RestoreDBFromBackup(1, "/restored"); err != nil {
		log.Fatal(err)
	}
	restored, err := shale.Open("/restored", &shale.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	defer restored.Close()
	v, err := restored.Get([]byte("k"), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("restored backup 1: k = %s\n", v)
	// Output:
	// made backup 1
	// made backup 2
	// backup 1 verified
	// backup 2 verified
	// restored backup 1: k = first
}
