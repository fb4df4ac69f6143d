package blob

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBlobNeverImportsSstable: blob stands on the block layer alone (the
// package row rule of DESIGN.md); neither it nor its tests depend on
// sstable, directly or through another package.
func TestBlobNeverImportsSstable(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to list the dependencies: %v", err)
	}
	for _, args := range [][]string{{"list", "-deps", "."}, {"list", "-deps", "-test", "."}} {
		out, err := exec.Command(goTool, args...).Output()
		if err != nil {
			t.Fatalf("go %s: %v", strings.Join(args, " "), err)
		}
		deps := strings.Fields(string(out))
		found := false
		for _, d := range deps {
			if d == "github.com/shaledb/shale/internal/block" {
				found = true
			}
			if d == "github.com/shaledb/shale/sstable" || strings.HasPrefix(d, "github.com/shaledb/shale/sstable/") {
				t.Errorf("go %s: blob depends on %s", strings.Join(args, " "), d)
			}
			if d == "github.com/shaledb/shale" {
				t.Errorf("go %s: blob depends on the root package", strings.Join(args, " "))
			}
		}
		if !found {
			t.Fatalf("go %s does not list internal/block: %q", strings.Join(args, " "), deps)
		}
	}
}
