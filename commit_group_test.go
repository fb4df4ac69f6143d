package shale

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/latencyfs"
)

// TestGroupCommitCarriesManySyncedWriters checks group commit under synced
// writes: while one group's WAL write (2 ms here) and sync run, the writers
// that arrive queue up and the next leader commits them together under one
// sync, so the groups and WAL file syncs are far fewer than the writes;
// every write is counted once in Metrics.Commit.Batches, every group as
// synced (WAL.Syncs), and every write is readable.
func TestGroupCommitCarriesManySyncedWriters(t *testing.T) {
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
	syncedGroups := m.WAL.Syncs - before.WAL.Syncs
	fileSyncs := m.WAL.FileSyncs - before.WAL.FileSyncs
	if batches != writers*perWriter {
		t.Fatalf("Metrics.Commit.Batches grew by %d for %d writes", batches, writers*perWriter)
	}
	if groups == 0 || groups > writers*perWriter/3 || syncedGroups != groups {
		t.Fatalf("%d commit groups (%d counted as synced) for %d synced writes from %d writers: want few, all synced", groups, syncedGroups, batches, writers)
	}
	// One file sync per write would be 320.
	if fileSyncs == 0 || fileSyncs > writers*perWriter/3 {
		t.Fatalf("%d WAL file syncs for %d synced writes from %d writers: group commit is not grouping", fileSyncs, batches, writers)
	}
	for w := range writers {
		for i := range perWriter {
			k := fmt.Sprintf("w%02d-%03d", w, i)
			if v, err := db.Get([]byte(k), nil); err != nil || string(v) != k {
				t.Fatalf("Get(%s) = %q, %v", k, v, err)
			}
		}
	}
	t.Logf("%d synced writes from %d writers in %d groups, %d file syncs (%.1f writes per sync)", batches, writers, groups, fileSyncs, float64(batches)/float64(fileSyncs))
}

// TestGroupCommitGathersReturningSyncedWriters checks that synced writers
// that write again as soon as they return share one WAL sync, instead of
// splitting into two cohorts that sync in turn (about half of them per
// sync): gatherSyncedWritersLocked lets the writers a synced group released
// queue up before the next synced group is taken.
func TestGroupCommitGathersReturningSyncedWriters(t *testing.T) {
	const writers, perWriter = 16, 20
	fs := latencyfs.New(vfs.NewMem(), latencyfs.Options{WriteLatency: 5 * time.Millisecond})
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
	batches := m.Commit.Batches - before.Commit.Batches
	syncs := m.WAL.FileSyncs - before.WAL.FileSyncs
	perSync := float64(batches) / float64(syncs)
	// Two cohorts would give about writers/2 per sync; the first and last
	// syncs of the run carry fewer.
	if perSync < 0.7*writers {
		t.Fatalf("%d synced writes from %d writers in %d WAL syncs: %.1f per sync, want nearly all writers in each", batches, writers, syncs, perSync)
	}
	t.Logf("%d synced writes from %d writers in %d WAL syncs (%.1f per sync)", batches, writers, syncs, perSync)
}
