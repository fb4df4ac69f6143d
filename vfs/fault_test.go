package vfs

import (
	"errors"
	"syscall"
	"testing"
)

func TestFaultFSRules(t *testing.T) {
	ffs := NewFaultFS(NewMem(), 1)
	ffs.AddRule(FaultRule{Op: OpSync, PathContains: ".log", Nth: 3})
	f, err := ffs.Create("/a.log")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		err := f.Sync()
		if (i == 3) != (err != nil) {
			t.Fatalf("sync %d: %v", i, err)
		}
		if i == 3 && !errors.Is(err, ErrInjected) {
			t.Fatalf("sync 3: want ErrInjected, got %v", err)
		}
	}
	g, _ := ffs.Create("/b.sst")
	if err := g.Sync(); err != nil {
		t.Fatalf("rule must match the path: %v", err)
	}
	ffs.AddRule(FaultRule{Op: OpWrite, PathContains: "b.sst", NoSpace: true, ShortWrite: true})
	n, err := g.Write([]byte("0123456789"))
	if !errors.Is(err, syscall.ENOSPC) || n != 5 {
		t.Fatalf("short ENOSPC write: n=%d err=%v", n, err)
	}
	if sz, _ := g.Size(); sz != 5 {
		t.Fatalf("torn write left %d bytes, want 5", sz)
	}
	ffs.ClearRules()
	if _, err := g.Write([]byte("x")); err != nil {
		t.Fatalf("after ClearRules: %v", err)
	}
	if ffs.Injected() != 2 {
		t.Fatalf("Injected = %d, want 2", ffs.Injected())
	}
	ffs.AddRule(FaultRule{Op: OpRename})
	if err := ffs.Rename("/a.log", "/c.log"); !errors.Is(err, ErrInjected) {
		t.Fatalf("rename: %v", err)
	}
}

func TestFaultFSProbability(t *testing.T) {
	ffs := NewFaultFS(NewMem(), 42)
	ffs.AddRule(FaultRule{Op: OpRead, Probability: 0.25})
	f, _ := ffs.Create("/x")
	f.Write(make([]byte, 100))
	fails := 0
	buf := make([]byte, 10)
	for i := 0; i < 4000; i++ {
		if _, err := f.ReadAt(buf, 0); err != nil {
			fails++
		}
	}
	if fails < 800 || fails > 1200 {
		t.Fatalf("%d of 4000 reads failed with p=0.25", fails)
	}
}
