// Package fuzzseed keeps the committed seed corpora of shale's go test
// -fuzz targets: testdata/fuzz/<Target>/seed-N files in the "go test fuzz
// v1" format, in the package directory of each target. It is used by tests
// only, and never by the engine.
package fuzzseed

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Sync writes seeds[target] (each seed one list of the target's arguments)
// as testdata/fuzz/<target>/seed-N when SHALE_WRITE_FUZZ_SEEDS=1, and
// otherwise checks that every target in seeds has a committed corpus. The
// arguments may be []byte, string, byte, uint16, uint32, uint64, int, int64
// or bool.
func Sync(t testing.TB, seeds map[string][][]any) {
	t.Helper()
	write := os.Getenv("SHALE_WRITE_FUZZ_SEEDS") == "1"
	for name, list := range seeds {
		dir := filepath.Join("testdata", "fuzz", name)
		if !write {
			if ents, err := os.ReadDir(dir); err != nil || len(ents) == 0 {
				t.Errorf("no seed corpus in %s (SHALE_WRITE_FUZZ_SEEDS=1 writes it): %v", dir, err)
			}
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for j, args := range list {
			body, err := Encode(args...)
			if err != nil {
				t.Fatalf("%s seed %d: %v", name, j, err)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%d", j)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Writing reports whether SHALE_WRITE_FUZZ_SEEDS=1 asks tests to write their
// corpora (for targets whose seeds are costly to build).
func Writing() bool { return os.Getenv("SHALE_WRITE_FUZZ_SEEDS") == "1" }

// Encode renders one corpus file holding args.
func Encode(args ...any) (string, error) {
	var sb strings.Builder
	sb.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			fmt.Fprintf(&sb, "[]byte(%q)\n", v)
		case string:
			fmt.Fprintf(&sb, "string(%q)\n", v)
		case byte:
			fmt.Fprintf(&sb, "byte('\\x%02x')\n", v)
		case uint16, uint32, uint64, int, int64:
			// The corpus names each integer by its Go type, as %T does.
			fmt.Fprintf(&sb, "%T(%d)\n", v, v)
		case bool:
			fmt.Fprintf(&sb, "bool(%t)\n", v)
		default:
			return "", fmt.Errorf("fuzzseed: argument of type %T", a)
		}
	}
	return sb.String(), nil
}
