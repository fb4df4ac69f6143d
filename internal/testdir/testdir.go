// Package testdir gives tests a temporary directory removed through
// vfs.Default.RemoveAll. testing's TempDir removes with os.RemoveAll, which
// fails under Wine (the Windows test run in CI) on any non-empty folder;
// vfs's RemoveAll removes file by file and works on every platform.
package testdir

import (
	"os"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// New returns a new empty directory that is removed when t ends.
func New(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "shale-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := vfs.Default.RemoveAll(dir); err != nil {
			t.Errorf("removing the test directory: %v", err)
		}
	})
	return dir
}
