package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

// foreignFiles puts files that are not the database's into dir: a note at
// the top and a user's subdirectory.
func foreignFiles(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "notes.txt"), "do not delete")
	writeFile(t, filepath.Join(dir, "mine", "data.csv"), "a,b\n1,2\n")
}

// sameForeignFiles fails unless the files foreignFiles wrote are as it
// wrote them.
func sameForeignFiles(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	got := dirState(t, dir)
	for name, sum := range want {
		if got[name] != sum {
			t.Errorf("%s: foreign file changed or gone (state %q, want %q)", name, got[name], sum)
		}
	}
}

func foreignState(t *testing.T, dir string) map[string]string {
	t.Helper()
	s := dirState(t, dir)
	want := map[string]string{}
	for _, name := range []string{"notes.txt", "mine", "mine/data.csv"} {
		if s[name] == "" {
			t.Fatalf("fixture %s missing", name)
		}
		want[name] = s[name]
	}
	return want
}

// TestBenchDestroysOnlyTheDatabase runs a fresh bench on a directory that
// holds a database and a user's files: the database is replaced, the
// user's files stay, and so they do through DestroyDB afterwards.
func TestBenchDestroysOnlyTheDatabase(t *testing.T) {
	dir := filepath.Join(testdir.New(t), "db")
	mustRun(t, "put", "--db", dir, "precious", "data")
	foreignFiles(t, dir)
	foreign := foreignState(t, dir)

	out, stderr, err := run(t, "bench", "--db", dir, "--benchmarks", "fillrandom,fillseq,readrandom", "--num", "300", "--seed", "5")
	if err != nil {
		t.Fatalf("bench on a directory with a database and foreign files: %v\n%s", err, out)
	}
	sameForeignFiles(t, dir, foreign)
	if want := "kept what is not the database's: mine/, notes.txt"; strings.Count(stderr, want) != 1 {
		t.Errorf("bench's stderr should name the kept files once (%q):\n%s", want, stderr)
	}
	kvs := dbContents(t, dir)
	if _, ok := kvs["precious"]; ok {
		t.Error("the old database survived a fresh bench: precious is still there")
	}
	if v := kvs[fmt.Sprintf("%016d", 0)]; len(v) != 100 {
		t.Errorf("bench's database is not in --db after the run: key 0 = %q", v)
	}

	if err := shale.DestroyDB(dir, nil); err != nil {
		t.Fatalf("DestroyDB: %v", err)
	}
	if d := diffStates(foreign, dirState(t, dir)); d != "" {
		t.Errorf("after DestroyDB the directory should hold exactly the foreign files: %s", d)
	}
}

// TestBenchFreshRunOnForeignDirectory runs bench on a directory that holds
// no database but a user's files (which an older bench refused): they stay.
func TestBenchFreshRunOnForeignDirectory(t *testing.T) {
	dir := testdir.New(t)
	foreignFiles(t, dir)
	foreign := foreignState(t, dir)
	if out, _, err := run(t, "bench", "--db", dir, "--benchmarks", "fillseq", "--num", "100"); err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	sameForeignFiles(t, dir, foreign)
}

// TestBenchRefusedWhileAnotherBenchRuns starts a bench in another process
// and, once that bench has recreated its database (so the lock must have
// survived DestroyDB and the reopen), tries a second bench, a fresh and an
// --use_existing_db one, and a put: all are refused and change nothing,
// while read-only get and scan work and see all of the first bench's
// writes. The first bench, still reading, is then killed; reopened, the
// database holds every key it wrote.
func TestBenchRefusedWhileAnotherBenchRuns(t *testing.T) {
	dir := filepath.Join(testdir.New(t), "db")
	foreignFiles(t, dir)
	foreign := foreignState(t, dir)
	const num = 5000
	// readrandom runs until killed: --duration only bounds a test whose
	// checks hang.
	first := shaleProcess(t, "bench", "--db", dir, "--benchmarks", "fillseq,fillseq,readrandom",
		"--num", fmt.Sprint(num), "--duration", "120", "--seed", "11")
	stdout, err := first.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var firstOut, firstErr syncBuffer
	first.Stderr = &firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	fills := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		n := 0
		for sc.Scan() {
			firstOut.Write([]byte(sc.Text() + "\n"))
			if strings.HasPrefix(sc.Text(), "fillseq ") {
				if n++; n == 2 {
					close(fills)
				}
			}
		}
		done <- first.Wait()
	}()
	defer first.Process.Kill()
	select {
	case <-fills:
	case err := <-done:
		t.Fatalf("the first bench ended before its fills: %v\n%s\n%s", err, firstOut.String(), firstErr.String())
	case <-time.After(time.Minute):
		t.Fatalf("the first bench did not finish its fills:\n%s", firstOut.String())
	}
	// The first bench is in readrandom now, holding the lock.

	for _, args := range [][]string{
		{"bench", "--db", dir, "--benchmarks", "fillseq", "--num", "10"},
		{"bench", "--db", dir, "--benchmarks", "readrandom", "--num", "10", "--use_existing_db"},
	} {
		out, errOut, code := runShaleProcess(t, args...)
		if code != 1 || out != "" || !strings.Contains(errOut, "is in use by another process") || !strings.Contains(errOut, "nothing was changed") {
			t.Errorf("shale %s beside a running bench: exit %d, stdout %q, stderr %q; want exit 1, the lock error and nothing run",
				strings.Join(args, " "), code, out, errOut)
		}
		if n := strings.Count(errOut, "shale:"); n != 1 {
			t.Errorf("the lock error has %d \"shale:\" prefixes, want 1: %q", n, errOut)
		}
	}
	if _, errOut, code := runShaleProcess(t, "put", "--db", dir, "k", "v"); code != 1 || !strings.Contains(errOut, "lock") {
		t.Errorf("put beside a running bench: exit %d, stderr %q; want the lock error", code, errOut)
	}
	key := fmt.Sprintf("%016d", num-1)
	if out, errOut, code := runShaleProcess(t, "get", "--db", dir, key); code != 0 || len(out) != 101 {
		t.Errorf("read-only get beside a running bench: exit %d, stdout %q, stderr %q; want the 100-byte value", code, out, errOut)
	}
	if out, errOut, code := runShaleProcess(t, "scan", "--db", dir); code != 0 || strings.Count(out, "\n") != num {
		t.Errorf("read-only scan beside a running bench: exit %d, %d entries, stderr %q; want the %d of fillseq", code, strings.Count(out, "\n"), errOut, num)
	}

	select {
	case err := <-done:
		t.Fatalf("the first bench ended while the others tried its directory: %v\n%s\n%s", err, firstOut.String(), firstErr.String())
	default:
	}
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-done
	if strings.Contains(firstErr.String(), "shale:") {
		t.Errorf("the first bench reported an error:\n%s", firstErr.String())
	}
	if n := len(dbContents(t, dir)); n != num {
		t.Errorf("the database holds %d keys after the run, want the %d of fillseq", n, num)
	}
	sameForeignFiles(t, dir, foreign)
}

// TestBenchRefusedWhileAWriterHasTheDB has this process hold a database
// open and write to it while a bench in another process tries it: the
// bench is refused, and every write is there afterwards.
func TestBenchRefusedWhileAWriterHasTheDB(t *testing.T) {
	dir := filepath.Join(testdir.New(t), "db")
	db, err := shale.Open(dir, &shale.Options{CreateIfMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	put := func(from, to int) {
		for i := from; i < to; i++ {
			if err := db.Put(fmt.Appendf(nil, "key%04d", i), fmt.Appendf(nil, "value%d", i), &shale.WriteOptions{Sync: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(0, 100)
	for _, extra := range [][]string{nil, {"--use_existing_db"}} {
		args := append([]string{"bench", "--db", dir, "--benchmarks", "fillseq,readrandom", "--num", "50"}, extra...)
		out, errOut, code := runShaleProcess(t, args...)
		if code != 1 || out != "" || !strings.Contains(errOut, "is in use by another process") {
			t.Errorf("shale %s beside a writer: exit %d, stdout %q, stderr %q; want exit 1 with the lock error",
				strings.Join(args, " "), code, out, errOut)
		}
	}
	put(100, 200)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = nil
	kvs := dbContents(t, dir)
	var lost []string
	for i := range 200 {
		if k, v := fmt.Sprintf("key%04d", i), fmt.Sprintf("value%d", i); kvs[k] != v {
			lost = append(lost, k)
		}
	}
	if len(lost) > 0 || len(kvs) != 200 {
		t.Errorf("after the refused benches the database holds %d keys, want the writer's 200; lost %d: %v",
			len(kvs), len(lost), lost[:min(len(lost), 5)])
	}
}

// TestBenchLockSpansFreshDBs checks that the run's lock is held from
// before the first open, across the recreation of a fresh_db benchmark,
// to its release, and that the lock survives the recreation: another
// locker is refused after each step.
func TestBenchLockSpansFreshDBs(t *testing.T) {
	cfg := tinyConfig(t, "fillseq")
	r := &benchRunner{cfg: cfg, fs: vfs.Default, progress: io.Discard}
	locked := func(when string) {
		t.Helper()
		l, err := shale.LockDirectory(cfg.db, nil)
		if err == nil {
			l.Close()
		}
		if !errors.Is(err, vfs.ErrLocked) {
			t.Errorf("%s: LockDirectory got %v, want the directory locked by the run", when, err)
		}
	}
	if err := r.useDir(); err != nil {
		t.Fatal(err)
	}
	locked("before the first open")
	if err := r.open(); err != nil {
		t.Fatal(err)
	}
	if err := r.db.Put([]byte("k"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := r.recreate(); err != nil {
			t.Fatal(err)
		}
		locked(fmt.Sprintf("after recreate %d", i+1))
		if _, err := r.db.Get([]byte("k"), nil); !errors.Is(err, shale.ErrNotFound) {
			t.Errorf("recreate %d: the old database's key: %v, want not found", i+1, err)
		}
	}
	if err := r.db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.releaseDir(); err != nil {
		t.Fatal(err)
	}
	l, err := shale.LockDirectory(cfg.db, nil)
	if err != nil {
		t.Fatalf("the run did not release its lock: %v", err)
	}
	l.Close()
}

// dbContents returns every key and value of the database in dir, read
// through the library rather than the verbs under test.
func dbContents(t *testing.T, dir string) map[string]string {
	t.Helper()
	db, err := shale.Open(dir, &shale.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	it := db.NewIterator(nil)
	kvs := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		kvs[string(it.Key())] = string(it.Value())
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		t.Fatal(err)
	}
	return kvs
}
