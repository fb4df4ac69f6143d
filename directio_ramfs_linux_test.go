package shale

import (
	"errors"
	"github.com/shaledb/shale/internal/testdir"
	"os"
	"strings"
	"testing"

	"github.com/shaledb/shale/vfs"
	"golang.org/x/sys/unix"
)

// TestDirectIORefusedOnRamfs opens a database with each direct-IO option on
// a real file system that refuses O_DIRECT: ramfs, mounted for the test
// (root only; skipped where mounting is not allowed). TestDirectIORefusedAtOpen
// simulates the refusal; this checks the kernel's EINVAL maps to the same
// error, naming the option, and that nothing is left behind.
func TestDirectIORefusedOnRamfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting ramfs needs root")
	}
	dir := testdir.New(t)
	if err := unix.Mount("ramfs", dir, "ramfs", 0, ""); err != nil {
		t.Skipf("cannot mount ramfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting the test's ramfs: %v", err)
		}
	})
	for _, c := range []struct {
		reads, flush bool
		want         string
	}{
		{true, false, "Options.UseDirectReads is set"},
		{false, true, "Options.UseDirectIOForFlushAndCompaction is set"},
	} {
		path := vfs.Default.PathJoin(dir, "db")
		opts := testOptions(vfs.Default)
		opts.UseDirectReads, opts.UseDirectIOForFlushAndCompaction = c.reads, c.flush
		db, err := Open(path, opts)
		if err == nil {
			db.Close()
			t.Fatalf("%s: Open succeeded on ramfs, which refuses O_DIRECT", c.want)
		}
		if msg := err.Error(); !strings.Contains(msg, c.want) || !strings.Contains(msg, path) || !strings.Contains(msg, "does not support direct IO") {
			t.Fatalf("error %q; want it to name %q and %s", msg, c.want, path)
		}
		if !errors.Is(err, ErrInvalidArgument) || !errors.Is(err, vfs.ErrDirectIOUnsupported) {
			t.Fatalf("error %v: want ErrInvalidArgument and ErrDirectIOUnsupported", err)
		}
		// The refused Open leaves no probe file (O_CREAT may create the
		// file before O_DIRECT is refused).
		names, err := vfs.Default.List(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		for _, n := range names {
			if strings.HasSuffix(n, ".dbtmp") {
				t.Fatalf("the refused Open left %s behind", n)
			}
		}
		// The directory opens without the option.
		db, err = Open(path, testOptions(vfs.Default))
		if err != nil {
			t.Fatalf("Open without direct IO after a refused one: %v", err)
		}
		if err := db.Put([]byte("k"), []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(path); err != nil {
			t.Fatal(err)
		}
	}
}
