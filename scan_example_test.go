package shale_test

import (
	"bytes"
	"fmt"
	"log"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/vfs"
)

// ExampleDB_Scan ranges over a key range forward and backward, at a
// snapshot, keeping one value past its loop step with bytes.Clone.
func ExampleDB_Scan() {
	db, err := shale.Open("db", &shale.Options{CreateIfMissing: true, FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"apple", "banana", "cherry", "date"} {
		if err := db.Put([]byte(k), []byte("fruit:"+k), nil); err != nil {
			log.Fatal(err)
		}
	}
	snap := db.NewSnapshot()
	defer snap.Release()
	if err := db.Delete([]byte("banana"), nil); err != nil {
		log.Fatal(err)
	}

	// [banana, date) as of the snapshot: banana is still there.
	var kept []byte
	for kv, err := range db.Scan(&shale.ReadOptions{Snapshot: snap}, []byte("banana"), []byte("date")) {
		if err != nil {
			log.Fatal(err) // an IO error or corruption ends the scan here
		}
		fmt.Printf("%s=%s\n", kv.Key, kv.Value)
		if kept == nil {
			kept = bytes.Clone(kv.Value) // kv is valid only in this step
		}
	}
	fmt.Println("kept", string(kept))

	// Everything now, last first.
	for kv, err := range db.ScanReverse(nil, nil, nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(string(kv.Key))
	}
	// Output:
	// banana=fruit:banana
	// cherry=fruit:cherry
	// kept fruit:banana
	// date
	// cherry
	// apple
}
