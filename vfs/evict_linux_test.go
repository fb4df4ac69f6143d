package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// residentPages counts the pages of name in the page cache (mincore).
func residentPages(t *testing.T, name string) int {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore: %v", e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

func TestDropCacheEvicts(t *testing.T) {
	dir := testDir(t)
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil && st.Type == unix.TMPFS_MAGIC {
		t.Skip("tmpfs keeps its pages in memory; nothing to evict")
	}
	name := filepath.Join(dir, "f")
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(name); err != nil {
		t.Fatal(err)
	}
	before := residentPages(t, name)
	if before == 0 {
		t.Fatal("a file just written and read has no page in the cache")
	}
	if err := DropCache(name); err != nil {
		t.Fatal(err)
	}
	if after := residentPages(t, name); after != 0 {
		t.Fatalf("%d of %d pages still cached after DropCache", after, before)
	}
	// The data is unchanged.
	if got, err := os.ReadFile(name); err != nil || string(got) != string(data) {
		t.Fatalf("file changed by DropCache: %v", err)
	}
	if err := DropCache(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("DropCache of a missing file: %v", err)
	}
}
