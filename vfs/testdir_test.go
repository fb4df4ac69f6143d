package vfs

import (
	"os"
	"testing"
)

// testDir returns a new temporary directory that is removed, file by file
// through Default.RemoveAll, when the test ends. t.TempDir is not used: its
// cleanup calls os.RemoveAll, which fails under Wine (docs/windows.md).
func testDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "shale-vfs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := Default.RemoveAll(dir); err != nil {
			t.Errorf("removing the test directory: %v", err)
		}
	})
	return dir
}
