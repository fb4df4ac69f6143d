package shale

import (
	"bufio"
	"errors"
	"github.com/shaledb/shale/internal/testdir"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// TestOpenHeldByAnotherProcess starts a child process that opens a DB and
// checks that this process cannot open the same directory meanwhile.
func TestOpenHeldByAnotherProcess(t *testing.T) {
	if dir := os.Getenv("SHALE_LOCK_CHILD_DIR"); dir != "" {
		db, err := Open(dir, nil)
		if err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("opened\n")
		// Hold the DB until the parent closes our stdin.
		bufio.NewReader(os.Stdin).ReadString('\n')
		db.Close()
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := testdir.New(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenHeldByAnotherProcess$")
	cmd.Env = append(os.Environ(), "SHALE_LOCK_CHILD_DIR="+dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "opened" {
		t.Fatalf("child: %q", line)
	}
	_, err := Open(dir, &Options{FS: vfs.Default})
	if !errors.Is(err, vfs.ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Open of a DB another process holds: %v", err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	db, err := Open(dir, &Options{FS: vfs.Default})
	if err != nil {
		t.Fatalf("Open after the other process closed it: %v", err)
	}
	db.Close()
}
