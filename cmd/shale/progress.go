package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/report"
	"github.com/shaledb/shale/vfs"
	"github.com/spf13/cobra"
)

// Progress on long work (issue 17, item 3): bench, compact and check draw
// one line on stderr, redrawn in place with "\r" at most four times a
// second, and erase it when the work ends, so that the results printed
// afterwards start on a clean line:
//
//	fillrandom   :   523008/1000000 ops   152.3k ops/s   ETA 3s
//	compact      :   12.5/40.1 MiB   8.2 MiB/s   ETA 3s
//
// Only when stdout and stderr are terminals (isTerminal) and --progress is
// not false.

// progressInterval is the least time between two redraws.
const progressInterval = 250 * time.Millisecond

// progressLine draws one progress line on w. Its clock is now, so that
// tests drive it with a fake one. Not safe for concurrent use (see
// startProgressLine).
type progressLine struct {
	w     io.Writer
	now   func() time.Time
	label string
	unit  string // "ops" or "bytes"
	total int64  // <= 0: unknown (no ETA, no total)
	start time.Time
	drawn time.Time // last redraw; zero before the first
	width int       // runes of the last line drawn, to erase it
}

func newProgressLine(w io.Writer, now func() time.Time, label, unit string, total int64) *progressLine {
	return &progressLine{w: w, now: now, label: label, unit: unit, total: total, start: now()}
}

// update redraws the line with done units finished, unless the last redraw
// was less than progressInterval ago.
func (p *progressLine) update(done int64) {
	now := p.now()
	if !p.drawn.IsZero() && now.Sub(p.drawn) < progressInterval {
		return
	}
	p.drawn = now
	line := p.render(done, now.Sub(p.start))
	n := len([]rune(line))
	pad := ""
	if n < p.width {
		pad = strings.Repeat(" ", p.width-n) // cover the longer line before
	}
	p.width = n
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
}

// render formats the line for done units after elapsed.
func (p *progressLine) render(done int64, elapsed time.Duration) string {
	var rate float64
	if elapsed > 0 {
		rate = float64(done) / elapsed.Seconds()
	}
	amount := func(v int64) string {
		if p.unit == "bytes" {
			return fmt.Sprintf("%.1f", float64(v)/(1<<20))
		}
		return fmt.Sprint(v)
	}
	unit, rateText := p.unit, report.FormatNumber(rate)+" "+p.unit+"/s"
	if p.unit == "bytes" {
		unit, rateText = "MiB", fmt.Sprintf("%.1f MiB/s", rate/(1<<20))
	}
	s := fmt.Sprintf("%-12s : %s", p.label, amount(done))
	if p.total > 0 {
		s += "/" + amount(p.total)
	}
	s += " " + unit + "   " + rateText
	if p.total > 0 && rate > 0 {
		if done >= p.total {
			s += "   ETA 0s"
		} else {
			eta := time.Duration(float64(p.total-done) / rate * float64(time.Second))
			s += "   ETA " + formatETA(eta)
		}
	}
	return s
}

// formatETA renders d rounded to seconds ("42s", "3m05s", "2h01m").
func formatETA(d time.Duration) string {
	s := int64(d.Round(time.Second).Seconds())
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 100*3600:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return ">99h"
}

// finish erases the line (the cursor ends at its start).
func (p *progressLine) finish() {
	if p.width > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
		p.width = 0
	}
}

// startProgressLine redraws a progress line on w from done() every
// progressInterval until the returned func is called, which erases it.
// With w nil it does nothing.
func startProgressLine(w io.Writer, label, unit string, total int64, done func() int64) (stop func()) {
	if w == nil {
		return func() {}
	}
	p := newProgressLine(w, time.Now, label, unit, total)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(progressInterval)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				p.finish()
				return
			case <-tick.C:
				p.update(done())
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { close(quit); wg.Wait() }) }
}

// progressWriter returns where a command draws its progress line: its
// stderr when --progress is on and both stdout and stderr are terminals,
// else nil (no progress at all: output redirected to a file or a pipe
// stays free of it).
func progressWriter(cmd *cobra.Command, enabled bool) io.Writer {
	if !enabled {
		return nil
	}
	w := cmd.ErrOrStderr()
	if progressForceTerminal || terminalWriter(cmd.OutOrStdout()) && terminalWriter(w) {
		return w
	}
	return nil
}

// terminalWriter reports whether w is a file that is a terminal.
func terminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f.Fd())
}

// progressForceTerminal, set by tests, takes any stderr for a terminal.
var progressForceTerminal bool

// progressFlagUsage is the help of every verb's --progress flag.
const progressFlagUsage = "show a progress line on stderr while working, when stdout and stderr are terminals (false: never)"

// readCountingFS counts the bytes read through the files it opens: check's
// progress, without a hook in the library (shale.Check reads every file
// it checks through Options.FS).
type readCountingFS struct {
	vfs.FS
	read atomic.Int64
}

func (fs *readCountingFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil {
		return nil, err
	}
	return &readCountingFile{File: f, read: &fs.read}, nil
}

// readCountingFile adds what ReadAt returns to read.
type readCountingFile struct {
	vfs.File
	read *atomic.Int64
}

func (f *readCountingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.read.Add(int64(n))
	return n, err
}

// dirBytes sums the sizes of the files in dir (0 where it cannot tell):
// the total of check's progress line.
func dirBytes(fs vfs.FS, dir string) int64 {
	names, err := fs.List(dir)
	if err != nil {
		return 0
	}
	var total int64
	for _, n := range names {
		if fi, err := fs.Stat(fs.PathJoin(dir, n)); err == nil && fi.Mode().IsRegular() {
			total += fi.Size()
		}
	}
	return total
}

// compactProgress draws compact's progress line: the bytes compactions
// read (Metrics().Compact.BytesRead, which grows as each compaction ends)
// against the bytes in every level when it started, an estimate of what a
// full compaction reads.
func compactProgress(w io.Writer, db *shale.DB) (stop func()) {
	if w == nil {
		return func() {}
	}
	m := db.Metrics()
	var total int64
	for _, l := range m.Levels {
		total += int64(l.Size)
	}
	base := m.Compact.BytesRead
	return startProgressLine(w, "compact", "bytes", total, func() int64 {
		return int64(db.Metrics().Compact.BytesRead - base)
	})
}
