package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dirState maps every file and directory under dir (relative, slash
// separated) to the SHA-256 of its contents ("dir" for a directory): two
// states are equal when no file was added, removed, renamed or changed.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	state := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			state[rel] = "dir"
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		state[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return state
}

// diffStates describes how after differs from before, "" when it does not.
func diffStates(before, after map[string]string) string {
	var diffs []string
	for name, sum := range before {
		switch got, ok := after[name]; {
		case !ok:
			diffs = append(diffs, "removed "+name)
		case got != sum:
			diffs = append(diffs, "changed "+name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			diffs = append(diffs, "added "+name)
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, ", ")
}

// writeFile writes a file of a test fixture, creating its directory.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// shaleProcess returns a command that runs this test binary as the shale
// tool with args, in a process of its own: TestMain runs main() when
// stressChildEnv is set, as for the children of `shale stress`.
func shaleProcess(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), stressChildEnv+"=1")
	return cmd
}

// runShaleProcess runs the shale tool with args in another process and
// returns what it printed and its exit code.
func runShaleProcess(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := shaleProcess(t, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running shale %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}
