package errorfs

import (
	"errors"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// TestFaultFSWriteZerosFailsAsWrite: zeros written through a fault FS pass
// to the wrapped file, and fail by the OpWrite rules.
func TestFaultFSWriteZerosFailsAsWrite(t *testing.T) {
	ffs := New(vfs.NewMem(), 1)
	f, err := ffs.Create("/a.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := vfs.WriteZeros(f, 0, 100); err != nil {
		t.Fatal(err)
	}
	if size, _ := f.Size(); size != 100 {
		t.Fatalf("size %d after 100 zeros", size)
	}
	ffs.AddRule(Rule{Op: OpWrite, PathContains: ".log"})
	if err := vfs.WriteZeros(f, 100, 100); !errors.Is(err, ErrInjected) {
		t.Fatalf("WriteZeros under an OpWrite rule = %v, want ErrInjected", err)
	}
	if size, _ := f.Size(); size != 100 {
		t.Fatalf("size %d after failed zeros", size)
	}
}

// TestCrashPointFSCountsWriteZeros: zeros written through a crash-point FS
// are a mutation (OpWrite, their byte count), not durable until a sync.
func TestCrashPointFSCountsWriteZeros(t *testing.T) {
	mem := vfs.NewMem()
	var got []Mutation
	cfs := NewCrashPointFS(mem, func(m Mutation) { got = append(got, m) })
	f, err := cfs.Create("/a.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got = got[:0]
	if err := vfs.WriteZeros(f, 0, 4096); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Op != OpWrite || got[0].Bytes != 4096 || got[0].Path != "/a.log" || got[0].Durable() {
		t.Fatalf("mutations %v; want one write of 4096 bytes to /a.log", got)
	}
}
