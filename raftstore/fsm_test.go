package raftstore

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/shaledb/shale/vfs"
)

// TestFSMSnapshotRestoresOnAnotherNode applies puts and deletes, takes a
// snapshot, keeps writing (the snapshot must not see it), persists it and
// restores it into an FSM on another file system that held other data.
func TestFSMSnapshotRestoresOnAnotherNode(t *testing.T) {
	fs := vfs.NewMem()
	f := openMemFSM(t, fs, "/fsm")
	defer f.Close()
	want := map[string]string{}
	idx := uint64(0)
	for i := 0; i < 500; i++ {
		k := fmt.Sprintf("k%03d", i%200)
		idx++
		if i%7 == 3 {
			applyCmd(t, f, idx, EncodeDelete([]byte(k)))
			delete(want, k)
		} else {
			v := fmt.Sprintf("v%d", i)
			applyCmd(t, f, idx, EncodePut([]byte(k), []byte(v)))
			want[k] = v
		}
		if i == 250 {
			if err := f.db.Flush(); err != nil { // part of it in tables
				t.Fatal(err)
			}
		}
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	applyCmd(t, f, idx+1, EncodePut([]byte("after"), []byte("snapshot")))
	var sink bufferSink
	if err := snap.Persist(&sink); err != nil || !sink.closed || sink.cancelled {
		t.Fatalf("Persist: %v (closed %v, cancelled %v)", err, sink.closed, sink.cancelled)
	}
	snap.Release()
	if names, _ := fs.List("/fsm"); len(names) != 1 {
		t.Fatalf("after Release the FSM directory holds %v, want only db", names)
	}

	other := vfs.NewMem()
	g := openMemFSM(t, other, "/node2")
	defer g.Close()
	applyCmd(t, g, 1, EncodePut([]byte("stale"), []byte("x")))
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if got := fsmContents(t, g); !maps.Equal(got, want) {
		t.Fatalf("restored FSM holds %d pairs, want %d (stale present: %v, after present: %v)",
			len(got), len(want), got["stale"] != "", got["after"] != "")
	}
	// The restored FSM takes writes and survives a reopen.
	applyCmd(t, g, 1000, EncodePut([]byte("new"), []byte("y")))
	g.Close()
	g = openMemFSM(t, other, "/node2")
	want["new"] = "y"
	if got := fsmContents(t, g); !maps.Equal(got, want) {
		t.Fatalf("after reopen: %d pairs, want %d", len(got), len(want))
	}
}

// TestFSMRestoreRefusesBadArchives feeds Restore damaged archives: each is
// refused with an error and the FSM keeps its contents.
func TestFSMRestoreRefusesBadArchives(t *testing.T) {
	fs := vfs.NewMem()
	f := openMemFSM(t, fs, "/fsm")
	defer f.Close()
	applyCmd(t, f, 1, EncodePut([]byte("a"), []byte("1")))
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var good bufferSink
	if err := snap.Persist(&good); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	g := openMemFSM(t, vfs.NewMem(), "/g")
	defer g.Close()
	applyCmd(t, g, 1, EncodePut([]byte("keep"), []byte("me")))

	var escape bytes.Buffer
	tw := tar.NewWriter(&escape)
	tw.WriteHeader(&tar.Header{Name: "../evil", Size: 1, Mode: 0o644, Typeflag: tar.TypeReg})
	tw.Write([]byte("x"))
	tw.Close()
	var empty bytes.Buffer
	tar.NewWriter(&empty).Close()
	cases := map[string][]byte{
		"truncated":     good.Bytes()[:len(good.Bytes())/2],
		"path escape":   escape.Bytes(),
		"empty archive": empty.Bytes(),
		"garbage":       bytes.Repeat([]byte{0xab}, 1024),
	}
	for name, data := range cases {
		if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err == nil {
			t.Fatalf("%s: Restore succeeded", name)
		}
		if got := fsmContents(t, g); len(got) != 1 || got["keep"] != "me" {
			t.Fatalf("%s: the FSM lost its contents: %v", name, got)
		}
	}
}

// TestFSMOpenFinishesInterruptedRestore builds the directory states a
// crash during Restore's swap leaves, and checks OpenFSM opens the right DB.
func TestFSMOpenFinishesInterruptedRestore(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(fs *vfs.MemFS) // from db=old, db.restore=new
		want  string
	}{
		{"restore unpacked, not swapped", func(fs *vfs.MemFS) {}, "old"},
		{"after db -> db.old", func(fs *vfs.MemFS) { fs.Rename("/f/db", "/f/db.old") }, "new"},
		{"after both renames", func(fs *vfs.MemFS) {
			fs.Rename("/f/db", "/f/db.old")
			fs.Rename("/f/db.restore", "/f/db")
		}, "new"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			src := openMemFSM(t, fs, "/src")
			applyCmd(t, src, 1, EncodePut([]byte("which"), []byte("new")))
			snap, err := src.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			var sink bufferSink
			if err := snap.Persist(&sink); err != nil {
				t.Fatal(err)
			}
			snap.Release()
			src.Close()
			f := openMemFSM(t, fs, "/f")
			applyCmd(t, f, 1, EncodePut([]byte("which"), []byte("old")))
			f.Close()
			if err := readTar(fs, "/f/db.restore", &sink); err != nil {
				t.Fatal(err)
			}
			tc.setup(fs)
			f = openMemFSM(t, fs, "/f")
			defer f.Close()
			if v, err := f.Get([]byte("which")); err != nil || string(v) != tc.want {
				t.Fatalf("opened %q, %v; want %q", v, err, tc.want)
			}
			if names, _ := fs.List("/f"); len(names) != 1 {
				t.Fatalf("leftovers in the FSM directory: %v", names)
			}
		})
	}
}

// TestFSMApplyRefusesMalformedCommands checks that a malformed command is
// an ErrBadCommand response, not a panic, and changes nothing.
func TestFSMApplyRefusesMalformedCommands(t *testing.T) {
	f := openMemFSM(t, vfs.NewMem(), "/fsm")
	defer f.Close()
	put := EncodePut([]byte("key"), []byte("value"))
	bad := [][]byte{nil, {1}, {2, 1, 0}, {1, 9, 0}, {1, 1, 200}, put[:3], append(EncodeDelete([]byte("k")), 'x')}
	for _, cmd := range bad {
		r := f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: cmd})
		if err, _ := r.(error); !errors.Is(err, ErrBadCommand) {
			t.Fatalf("Apply(%x) = %v, want ErrBadCommand", cmd, r)
		}
	}
	if got := fsmContents(t, f); len(got) != 0 {
		t.Fatalf("malformed commands wrote %v", got)
	}
	applyCmd(t, f, 2, put)
	if v, err := f.Get([]byte("key")); err != nil || string(v) != "value" {
		t.Fatalf("Get = %q, %v", v, err)
	}
}
