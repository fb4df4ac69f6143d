package shale

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/latencyfs"
)

// TestCommitGroupsCarryManySyncedWriters checks group commit under synced
// writes: while one group's WAL write and sync take their time, the writers
// that arrive queue up and the next leader commits them together, so the
// commit groups (Metrics.Commit.Groups, and the syncs) are far fewer than
// the writes, every write is counted once in Metrics.Commit.Batches, and
// every write is readable.
func TestCommitGroupsCarryManySyncedWriters(t *testing.T) {
	const writers, perWriter = 16, 20
	fs := latencyfs.New(vfs.NewMem(), latencyfs.Options{WriteLatency: 2 * time.Millisecond})
	db, err := Open("/db", testOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	before := db.Metrics()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				k := fmt.Sprintf("w%02d-%03d", w, i)
				if err := db.Put([]byte(k), []byte(k), &WriteOptions{Sync: true}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	m := db.Metrics()
	groups := m.Commit.Groups - before.Commit.Groups
	batches := m.Commit.Batches - before.Commit.Batches
	syncs := m.WAL.Syncs - before.WAL.Syncs
	if batches != writers*perWriter {
		t.Fatalf("Metrics.Commit.Batches grew by %d for %d writes", batches, writers*perWriter)
	}
	// Each write waits at least one 2 ms WAL write: with 16 writers queued
	// behind it a group carries several. One writer per group would be 320.
	if groups == 0 || groups > writers*perWriter/3 {
		t.Fatalf("%d commit groups for %d synced writes from %d writers: group commit is not grouping", groups, batches, writers)
	}
	if syncs != groups {
		t.Fatalf("%d WAL syncs for %d commit groups of synced writes, want one per group", syncs, groups)
	}
	for w := range writers {
		for i := range perWriter {
			k := fmt.Sprintf("w%02d-%03d", w, i)
			if v, err := db.Get([]byte(k), nil); err != nil || string(v) != k {
				t.Fatalf("Get(%s) = %q, %v", k, v, err)
			}
		}
	}
	t.Logf("%d synced writes from %d writers in %d groups (%.1f per sync)", batches, writers, groups, float64(batches)/float64(syncs))
}
