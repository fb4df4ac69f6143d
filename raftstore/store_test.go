package raftstore

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shaledb/shale"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// The tests named TestStore_* mirror raft-boltdb's test list (FirstIndex,
// LastIndex, GetLog, SetLog, SetLogs, DeleteRange, Set_Get,
// SetUint64_GetUint64): the behaviour raft expects of a LogStore.

func TestStore_FirstIndex(t *testing.T) {
	s := openMemStore(t, vfs.NewMem())
	defer s.Close()
	checkIndexes(t, s, 0, 0)
	if err := s.StoreLogs([]*raft.Log{testLog(1, "a"), testLog(2, "b"), testLog(3, "c")}); err != nil {
		t.Fatal(err)
	}
	if idx, _ := s.FirstIndex(); idx != 1 {
		t.Fatalf("first index %d, want 1", idx)
	}
}

func TestStore_LastIndex(t *testing.T) {
	s := openMemStore(t, vfs.NewMem())
	defer s.Close()
	if err := s.StoreLogs([]*raft.Log{testLog(1, "a"), testLog(2, "b"), testLog(3, "c")}); err != nil {
		t.Fatal(err)
	}
	if idx, _ := s.LastIndex(); idx != 3 {
		t.Fatalf("last index %d, want 3", idx)
	}
}

func TestStore_GetLog(t *testing.T) {
	s := openMemStore(t, vfs.NewMem())
	defer s.Close()
	var got raft.Log
	if err := s.GetLog(1, &got); err != raft.ErrLogNotFound {
		t.Fatalf("GetLog of an empty store: %v, want raft.ErrLogNotFound", err)
	}
	want := []*raft.Log{testLog(1, "a"), testLog(2, "b"), testLog(3, "c")}
	if err := s.StoreLogs(want); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if err := s.GetLog(w.Index, &got); err != nil {
			t.Fatal(err)
		}
		if !logsEqual(&got, w) {
			t.Fatalf("GetLog(%d) = %+v, want %+v", w.Index, got, *w)
		}
	}
	if err := s.GetLog(4, &got); err != raft.ErrLogNotFound {
		t.Fatalf("GetLog(4): %v, want raft.ErrLogNotFound", err)
	}
}

func TestStore_SetLog(t *testing.T) {
	s := openMemStore(t, vfs.NewMem())
	defer s.Close()
	w := testLog(1, "log1")
	if err := s.StoreLog(w); err != nil {
		t.Fatal(err)
	}
	var got raft.Log
	if err := s.GetLog(1, &got); err != nil || !logsEqual(&got, w) {
		t.Fatalf("GetLog(1) = %+v, %v; want %+v", got, err, *w)
	}
}

func TestStore_SetLogs(t *testing.T) {
	s := openMemStore(t, vfs.NewMem())
	defer s.Close()
	w1, w2 := testLog(1, "log1"), testLog(2, "log2")
	if err := s.StoreLogs([]*raft.Log{w1, w2}); err != nil {
		t.Fatal(err)
	}
	var got raft.Log
	for _, w := range []*raft.Log{w1, w2} {
		if err := s.GetLog(w.Index, &got); err != nil || !logsEqual(&got, w) {
			t.Fatalf("GetLog(%d) = %+v, %v; want %+v", w.Index, got, err, *w)
		}
	}
	checkIndexes(t, s, 1, 2)
}

func TestStore_DeleteRange(t *testing.T) {
	s := openMemStore(t, vfs.NewMem())
	defer s.Close()
	if err := s.StoreLogs([]*raft.Log{testLog(1, "a"), testLog(2, "b"), testLog(3, "c")}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(1, 2); err != nil {
		t.Fatal(err)
	}
	var got raft.Log
	for _, idx := range []uint64{1, 2} {
		if err := s.GetLog(idx, &got); err != raft.ErrLogNotFound {
			t.Fatalf("GetLog(%d) after DeleteRange(1, 2): %v, want raft.ErrLogNotFound", idx, err)
		}
	}
	checkIndexes(t, s, 3, 3)
	if err := s.DeleteRange(3, 3); err != nil {
		t.Fatal(err)
	}
	checkIndexes(t, s, 0, 0)
}

func TestStore_Set_Get(t *testing.T) {
	s := openMemStore(t, vfs.NewMem())
	defer s.Close()
	if _, err := s.Get([]byte("bad")); err == nil || err.Error() != "not found" || !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("Get of a missing key: %v, want the error raft expects (\"not found\")", err)
	}
	if err := s.Set([]byte("hello"), []byte("world")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get([]byte("hello")); err != nil || string(v) != "world" {
		t.Fatalf("Get = %q, %v", v, err)
	}
}

func TestStore_SetUint64_GetUint64(t *testing.T) {
	s := openMemStore(t, vfs.NewMem())
	defer s.Close()
	if v, err := s.GetUint64([]byte("bad")); err == nil || err.Error() != "not found" || v != 0 {
		t.Fatalf("GetUint64 of a missing key: %d, %v", v, err)
	}
	if err := s.SetUint64([]byte("abc"), 123); err != nil {
		t.Fatal(err)
	}
	if v, err := s.GetUint64([]byte("abc")); err != nil || v != 123 {
		t.Fatalf("GetUint64 = %d, %v", v, err)
	}
	// A stable key never shows up as a log entry, nor moves the indexes.
	checkIndexes(t, s, 0, 0)
}

// TestStoreIndexesFollowModel runs random StoreLogs (with gaps, as after a
// snapshot restore) and DeleteRange calls (from the front, as compaction
// does, from the back, as a conflict truncation does, and in the middle)
// against a map, checking the indexes and every entry, also after reopen.
func TestStoreIndexesFollowModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	fs := vfs.NewMem()
	s := openMemStore(t, fs)
	defer func() { s.Close() }()
	model := map[uint64]string{}
	bounds := func() (uint64, uint64) {
		var lo, hi uint64
		for k := range model {
			if lo == 0 || k < lo {
				lo = k
			}
			hi = max(hi, k)
		}
		return lo, hi
	}
	next := uint64(1)
	for op := 0; op < 300; op++ {
		switch r := rng.IntN(10); {
		case r < 5:
			if rng.IntN(8) == 0 {
				next += uint64(rng.IntN(20)) // a gap
			}
			n := 1 + rng.IntN(8)
			var logs []*raft.Log
			for i := 0; i < n; i++ {
				d := fmt.Sprintf("v%d-%d", next, op)
				logs = append(logs, testLog(next, d))
				model[next] = d
				next++
			}
			if err := s.StoreLogs(logs); err != nil {
				t.Fatal(err)
			}
		case r < 9:
			lo, hi := bounds()
			if lo == 0 {
				continue
			}
			var a, b uint64
			switch rng.IntN(3) {
			case 0: // compaction: a prefix
				a, b = lo, lo+uint64(rng.IntN(int(hi-lo+1)))
			case 1: // truncation: a suffix
				a, b = lo+uint64(rng.IntN(int(hi-lo+1))), hi
				next = a
			default:
				a = lo + uint64(rng.IntN(int(hi-lo+1)))
				b = a + uint64(rng.IntN(10))
			}
			if err := s.DeleteRange(a, b); err != nil {
				t.Fatal(err)
			}
			for k := range model {
				if k >= a && k <= b {
					delete(model, k)
				}
			}
			if _, hi := bounds(); hi >= next {
				next = hi + 1
			}
		default:
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openMemStore(t, fs)
		}
		lo, hi := bounds()
		checkIndexes(t, s, lo, hi)
	}
	var got raft.Log
	for idx := uint64(0); idx <= next+1; idx++ {
		err := s.GetLog(idx, &got)
		want, ok := model[idx]
		switch {
		case !ok && err != raft.ErrLogNotFound:
			t.Fatalf("GetLog(%d): %v, want raft.ErrLogNotFound", idx, err)
		case ok && (err != nil || !logsEqual(&got, testLog(idx, want))):
			t.Fatalf("GetLog(%d) = %+v, %v, want data %q", idx, got, err, want)
		}
	}
}

// TestStoreLogsSurviveCrash crashes (a MemFS crash clone: unsynced bytes
// dropped) right after StoreLogs and Set return, and finds every
// acknowledged entry and key after reopening; a DeleteRange acknowledged
// before the crash stays applied.
func TestStoreLogsSurviveCrash(t *testing.T) {
	fs := vfs.NewMem()
	s := openMemStore(t, fs)
	var acked []*raft.Log
	for i := uint64(1); i <= 200; i += 4 {
		batch := []*raft.Log{testLog(i, "a"), testLog(i+1, "b"), testLog(i+2, "c"), testLog(i+3, "d")}
		if err := s.StoreLogs(batch); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, batch...)
	}
	if err := s.DeleteRange(1, 40); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone()
	s.Close()

	s2 := openMemStore(t, crashed)
	defer s2.Close()
	checkIndexes(t, s2, 41, 200)
	var got raft.Log
	for _, w := range acked {
		err := s2.GetLog(w.Index, &got)
		if w.Index <= 40 {
			if err != raft.ErrLogNotFound {
				t.Fatalf("entry %d deleted before the crash: %v", w.Index, err)
			}
			continue
		}
		if err != nil || !logsEqual(&got, w) {
			t.Fatalf("acknowledged entry %d after the crash: %+v, %v", w.Index, got, err)
		}
	}
	if v, err := s2.GetUint64([]byte("CurrentTerm")); err != nil || v != 7 {
		t.Fatalf("CurrentTerm after the crash = %d, %v", v, err)
	}
}

// TestStoreNoSyncLosesEntriesInCrash shows that the crash test above can
// fail: with Options.NoSync the same crash loses acknowledged entries.
func TestStoreNoSyncLosesEntriesInCrash(t *testing.T) {
	fs := vfs.NewMem()
	s, err := Open("/raft", &Options{DB: &shale.Options{FS: fs}, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs([]*raft.Log{testLog(1, "a"), testLog(2, "b")}); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone()
	s.Close()
	s2 := openMemStore(t, crashed)
	defer s2.Close()
	checkIndexes(t, s2, 0, 0)
}

// TestLogCodecRoundTripsAndRefusesDamage encodes entries with every field
// set and unset, decodes them back, and checks that each truncation and a
// wrong version or index give an ErrCorruption error.
func TestLogCodecRoundTripsAndRefusesDamage(t *testing.T) {
	logs := []*raft.Log{
		testLog(1, "data"),
		{Index: 2},
		{Index: 1 << 40, Term: 1 << 33, Type: raft.LogConfiguration, Data: make([]byte, 300)},
		{Index: 3, AppendedAt: time.Unix(0, -5)},
	}
	for _, l := range logs {
		enc := appendLog(nil, l)
		var got raft.Log
		if err := decodeLog(l.Index, enc, &got); err != nil || !logsEqual(&got, l) {
			t.Fatalf("round trip of %+v: %+v, %v", *l, got, err)
		}
		for n := 0; n < len(enc); n++ {
			if err := decodeLog(l.Index, enc[:n], &got); !errors.Is(err, shale.ErrCorruption) {
				t.Fatalf("%d of %d bytes: %v, want ErrCorruption", n, len(enc), err)
			}
		}
		if err := decodeLog(l.Index, append(enc, 0), &got); !errors.Is(err, shale.ErrCorruption) {
			t.Fatalf("a trailing byte: %v", err)
		}
		if err := decodeLog(l.Index+1, enc, &got); !errors.Is(err, shale.ErrCorruption) {
			t.Fatalf("wrong index: %v", err)
		}
		bad := append([]byte{2}, enc[1:]...)
		if err := decodeLog(l.Index, bad, &got); !errors.Is(err, shale.ErrCorruption) {
			t.Fatalf("version 2: %v", err)
		}
	}
}

// TestStoreCrashAtEveryMutationKeepsWholeBatches crashes (a MemFS crash
// clone) at every file-system mutation of a run of StoreLogs batches and a
// DeleteRange, reopens each clone, and checks that the log is the state
// after the operations acknowledged before the crash, or after the one in
// flight too: never part of a batch, never less than was acknowledged.
func TestStoreCrashAtEveryMutationKeepsWholeBatches(t *testing.T) {
	mem := vfs.NewMem()
	type crash struct {
		fs   *vfs.MemFS
		done int // operations acknowledged when the mutation happened
	}
	var crashes []crash
	done := 0
	recording := false
	crashFS := errorfs.NewCrashPointFS(mem, func(errorfs.Mutation) {
		if recording {
			crashes = append(crashes, crash{mem.CrashClone(), done})
		}
	})
	s, err := Open("/raft", &Options{DB: &shale.Options{FS: crashFS}})
	if err != nil {
		t.Fatal(err)
	}
	// states[j] is the log after j operations.
	states := []map[uint64]string{{}}
	next := uint64(1)
	recording = true
	for op := 0; op < 24; op++ {
		st := maps.Clone(states[len(states)-1])
		if op == 16 {
			if err := s.DeleteRange(1, 30); err != nil {
				t.Fatal(err)
			}
			for k := range st {
				if k <= 30 {
					delete(st, k)
				}
			}
		} else {
			var logs []*raft.Log
			for i := 0; i < 4; i++ {
				d := fmt.Sprintf("op%d-%d", op, i)
				logs = append(logs, testLog(next, d))
				st[next] = d
				next++
			}
			if err := s.StoreLogs(logs); err != nil {
				t.Fatal(err)
			}
		}
		done++
		states = append(states, st)
	}
	recording = false
	s.Close()
	if len(crashes) < 24 {
		t.Fatalf("only %d mutations recorded", len(crashes))
	}
	t.Logf("%d crash points", len(crashes))
	read := func(s *Store) map[uint64]string {
		m := map[uint64]string{}
		var l raft.Log
		for idx := uint64(1); idx < next; idx++ {
			err := s.GetLog(idx, &l)
			if err == raft.ErrLogNotFound {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			m[idx] = string(l.Data)
		}
		return m
	}
	for i, c := range crashes {
		s, err := Open("/raft", &Options{DB: &shale.Options{FS: c.fs}})
		if err != nil {
			t.Fatalf("crash point %d: reopen: %v", i, err)
		}
		got := read(s)
		ok := maps.Equal(got, states[c.done]) || (c.done+1 < len(states) && maps.Equal(got, states[c.done+1]))
		if !ok {
			t.Fatalf("crash point %d (%d operations acknowledged): the log holds %d entries, matching neither state %d (%d) nor the next",
				i, c.done, len(got), c.done, len(states[c.done]))
		}
		var lo, hi uint64
		for k := range got {
			if lo == 0 || k < lo {
				lo = k
			}
			hi = max(hi, k)
		}
		checkIndexes(t, s, lo, hi)
		s.Close()
	}
}
