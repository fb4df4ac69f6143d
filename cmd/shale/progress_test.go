package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

// fakeClock is a clock tests advance by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestProgressLineRedrawsAtMostFourTimesASecond(t *testing.T) {
	var buf bytes.Buffer
	clk := &fakeClock{t: time.Unix(1000, 0)}
	p := newProgressLine(&buf, clk.now, "fillrandom", "ops", 1000)
	// 100 updates 10 ms apart: one second.
	for i := 1; i <= 100; i++ {
		clk.advance(10 * time.Millisecond)
		p.update(int64(i * 5))
	}
	if got := strings.Count(buf.String(), "\r"); got < 3 || got > 4 {
		t.Errorf("%d redraws in one second of updates every 10 ms, want 3 or 4 (at most one per %v):\n%q", got, progressInterval, buf.String())
	}
	if strings.Contains(buf.String(), "\n") {
		t.Errorf("the progress line printed a newline: %q", buf.String())
	}
}

func TestProgressLineShowsDoneTotalRateAndETA(t *testing.T) {
	var buf bytes.Buffer
	clk := &fakeClock{t: time.Unix(1000, 0)}
	p := newProgressLine(&buf, clk.now, "fillrandom", "ops", 1000)
	clk.advance(2 * time.Second)
	p.update(500) // 250 ops/s, 500 to go: 2 s
	want := "\rfillrandom   : 500/1000 ops   250 ops/s   ETA 2s"
	if buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
	// A shorter line covers the longer one before it.
	buf.Reset()
	clk.advance(98 * time.Second)
	p.update(999)
	if got := buf.String(); !strings.HasPrefix(got, "\rfillrandom   : 999/1000 ops   9.99 ops/s   ETA 0s") {
		t.Errorf("got %q", got)
	}
	// finish erases the line: spaces over all of it, the cursor back.
	buf.Reset()
	width := p.width
	p.finish()
	if got, want := buf.String(), "\r"+strings.Repeat(" ", width)+"\r"; got != want {
		t.Errorf("finish wrote %q, want %q", got, want)
	}
	buf.Reset()
	p.finish()
	if buf.Len() != 0 {
		t.Errorf("a second finish wrote %q", buf.String())
	}
}

func TestProgressLineWithoutTotalOrInBytes(t *testing.T) {
	var buf bytes.Buffer
	clk := &fakeClock{t: time.Unix(1000, 0)}
	p := newProgressLine(&buf, clk.now, "flush", "ops", 0)
	clk.advance(time.Second)
	p.update(3)
	if got := buf.String(); got != "\rflush        : 3 ops   3 ops/s" {
		t.Errorf("unknown total: got %q", got)
	}
	buf.Reset()
	p = newProgressLine(&buf, clk.now, "compact", "bytes", 40<<20)
	clk.advance(4 * time.Second)
	p.update(10 << 20)
	if got, want := buf.String(), "\rcompact      : 10.0/40.0 MiB   2.5 MiB/s   ETA 12s"; got != want {
		t.Errorf("bytes: got %q, want %q", got, want)
	}
}

func TestFormatETA(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 1400 * time.Millisecond: "1s", 59 * time.Second: "59s", 185 * time.Second: "3m05s",
		2*time.Hour + time.Minute: "2h01m", 200 * time.Hour: ">99h",
	} {
		if got := formatETA(d); got != want {
			t.Errorf("formatETA(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestCommandsDrawNoProgressWhenNotATerminal runs bench, compact and check
// with stderr a buffer (not a terminal): no progress line, not a "\r"; and
// bench again with the buffer taken for a terminal, where it draws one, so
// that the first half can fail.
func TestCommandsDrawNoProgressWhenNotATerminal(t *testing.T) {
	db := filepath.Join(testdir.New(t), "db")
	for _, args := range [][]string{
		// A second: long enough for the line's first redraw (250 ms).
		{"bench", "--db", db, "--num", "2000", "--benchmarks", "fillrandom", "--duration", "1", "--seed", "1"},
		{"compact", "--db", db},
		{"check", "--db", db},
	} {
		out, errOut, err := run(t, args...)
		if err != nil {
			t.Fatalf("shale %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
		if strings.Contains(out+errOut, "\r") || strings.Contains(errOut, "ETA") {
			t.Errorf("shale %s drew progress on a non-terminal:\n%q", args[0], errOut)
		}
	}
	progressForceTerminal = true
	defer func() { progressForceTerminal = false }()
	args := []string{"bench", "--db", db, "--num", "2000", "--benchmarks", "fillrandom", "--duration", "1", "--seed", "1"}
	_, errOut, err := run(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "\rfillrandom   : ") || !strings.Contains(errOut, "ops/s") {
		t.Errorf("bench on a terminal drew no progress line:\n%q", errOut)
	}
	if strings.Contains(errOut, "... ") {
		t.Errorf("bench on a terminal printed the \"... N ops\" lines beside its progress line:\n%q", errOut)
	}
	_, errOut, err = run(t, append(args, "--progress=false")...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(errOut, "\r") {
		t.Errorf("bench --progress=false drew progress:\n%q", errOut)
	}
}

// TestCheckProgressCountsTheBytesCheckRead checks that check's progress
// counter sees shale.Check read the database's files: at least the tables'
// bytes, about the directory's size.
func TestCheckProgressCountsTheBytesCheckRead(t *testing.T) {
	dir := filepath.Join(testdir.New(t), "db")
	db, err := shale.Open(dir, &shale.Options{CreateIfMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		if err := db.Put([]byte(strings.Repeat("k", 8)+string(rune('a'+i%26))+strings.Repeat("x", i%7)), bytes.Repeat([]byte{byte(i)}, 200), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	counting := &readCountingFS{FS: vfs.Default}
	rep, err := shale.Check(dir, &shale.Options{FS: counting})
	if err != nil || !rep.OK() {
		t.Fatalf("check: %v\n%v", err, rep)
	}
	total := dirBytes(vfs.Default, dir)
	if read := counting.read.Load(); total == 0 || read < total/2 {
		t.Errorf("check read %d bytes through the counting FS of a %d-byte directory", read, total)
	}
}
