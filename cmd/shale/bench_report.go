package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/report"
	"github.com/shaledb/shale/vfs"
)

// --report FILE (issue 17, item 2): while each benchmark runs, a sampler
// records once a second the ops finished in the last second and the DB's
// write counters (Metrics: WAL, flush and compaction bytes written, flushes
// and compactions); --report turns the latency histograms on (as
// --histogram does, without printing them); and at the end of the run the
// page is written with the LSM's shape (files and bytes per level). The
// page is one self-contained HTML file (internal/report).

// reportSampleInterval is the sampler's period: per-second intervals, so
// that a stall of a second or more shows as a dip.
const reportSampleInterval = time.Second

// benchReport collects what the report of one run shows.
type benchReport struct {
	start     time.Time // start of the run: the timeline's zero
	workloads []*workloadSamples
	// mu guards timeline and the counters' baseline (last, lastDB), which
	// the samplers and the final sample of each benchmark update.
	mu       sync.Mutex
	timeline []writeSample
	last     writeCounters
	lastDB   *shale.DB
	total    writeCounters // summed over every DB of the run
	shape    []shale.LevelMetrics
}

// workloadSamples is one benchmark's part of the report.
type workloadSamples struct {
	name       string
	startSec   float64        // seconds since the run's start
	throughput []report.Point // (seconds since the benchmark's start, ops/s of the interval ending then)
	res        benchResult
}

// writeCounters are the Metrics counters the report plots over time.
type writeCounters struct {
	wal, flush, compact    uint64 // bytes written
	flushes, compactions   uint64
	stalls                 uint64 // slowdowns and stops
	stallDuration          time.Duration
	l0Files, memtableBytes uint64 // levels, not counters: the last value
}

// writeSample is the run's cumulative counters at one moment.
type writeSample struct {
	sec float64 // since the run's start
	c   writeCounters
}

func countersOf(m *shale.Metrics) writeCounters {
	c := writeCounters{
		wal: m.WAL.BytesWritten, flush: m.Flush.BytesWritten, compact: m.Compact.BytesWritten,
		flushes: m.Flush.Count, compactions: m.Compact.Count,
		stalls: m.Stall.Slowdowns + m.Stall.Stops, stallDuration: m.Stall.Duration,
		memtableBytes: m.MemtableSize,
	}
	if len(m.Levels) > 0 {
		c.l0Files = uint64(m.Levels[0].NumFiles)
	}
	return c
}

// sampleDB adds db's counters to the timeline at now. Counters start from
// zero in each new DB (fresh benchmarks recreate it), so the timeline sums
// the growth since the previous sample of the same DB.
func (rep *benchReport) sampleDB(db *shale.DB, now time.Time) {
	if db == nil {
		return
	}
	c := countersOf(db.Metrics())
	rep.mu.Lock()
	defer rep.mu.Unlock()
	prev := rep.last
	if db != rep.lastDB {
		prev = writeCounters{}
	}
	grow := func(cur, old uint64) uint64 {
		if cur < old { // a closed DB reports zeros
			return 0
		}
		return cur - old
	}
	rep.total.wal += grow(c.wal, prev.wal)
	rep.total.flush += grow(c.flush, prev.flush)
	rep.total.compact += grow(c.compact, prev.compact)
	rep.total.flushes += grow(c.flushes, prev.flushes)
	rep.total.compactions += grow(c.compactions, prev.compactions)
	rep.total.stalls += grow(c.stalls, prev.stalls)
	if c.stallDuration > prev.stallDuration {
		rep.total.stallDuration += c.stallDuration - prev.stallDuration
	}
	rep.total.l0Files, rep.total.memtableBytes = c.l0Files, c.memtableBytes
	rep.last, rep.lastDB = c, db
	rep.timeline = append(rep.timeline, writeSample{sec: now.Sub(rep.start).Seconds(), c: rep.total})
}

// startSampler samples the running benchmark name once a second until the
// returned func is called with the benchmark's result, which adds the last
// (partial) interval.
func (r *benchRunner) startSampler(name string) (stop func(res benchResult)) {
	rep := r.report
	if rep == nil {
		return func(benchResult) {}
	}
	db := r.db // the benchmark's DB; one it replaces while running reports zeros
	start := time.Now()
	w := &workloadSamples{name: name, startSec: start.Sub(rep.start).Seconds()}
	rep.sampleDB(db, start)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex // guards last, lastDone and w.throughput
	last, lastDone := start, int64(0)
	wg.Go(func() {
		tick := time.NewTicker(reportSampleInterval)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case now := <-tick.C:
				done := r.done.Load()
				mu.Lock()
				if dt := now.Sub(last).Seconds(); dt > 0 {
					w.throughput = append(w.throughput, report.Point{X: now.Sub(start).Seconds(), Y: float64(done-lastDone) / dt})
				}
				last, lastDone = now, done
				mu.Unlock()
				rep.sampleDB(db, now)
			}
		}
	})
	return func(res benchResult) {
		close(quit)
		wg.Wait()
		end := start.Add(res.elapsed)
		if res.elapsed <= 0 {
			end = time.Now()
		}
		// The last interval: the exact op count (threads add theirs to
		// r.done in steps) over what is left. A sliver of an interval is
		// left out, as its rate is noise, unless there is no other point.
		if dt := end.Sub(last).Seconds(); dt >= 0.1 || len(w.throughput) == 0 {
			rate := 0.0
			if dt > 0 {
				rate = float64(res.ops-lastDone) / dt
			}
			w.throughput = append(w.throughput, report.Point{X: end.Sub(start).Seconds(), Y: max(rate, 0)})
		}
		rep.sampleDB(r.db, time.Now())
		w.res = res
		rep.workloads = append(rep.workloads, w)
	}
}

// finishReport records the LSM's shape at the end of the run.
func (r *benchRunner) finishReport() {
	if r.report == nil || r.db == nil {
		return
	}
	r.report.sampleDB(r.db, time.Now())
	r.report.shape = r.db.Metrics().Levels
}

// latencyPercentiles are the quantiles the report shows, with their names.
var latencyPercentiles = []struct {
	name string
	q    float64 // 100 = the maximum
}{{"p50", 50}, {"p90", 90}, {"p99", 99}, {"p99.9", 99.9}, {"max", 100}}

// page builds the report's page.
func (rep *benchReport) page(cfg *benchConfig, dir string) *report.Page {
	p := &report.Page{
		Title: "shale bench report",
		Meta: [][2]string{
			{"shale", shale.Version},
			{"Started", rep.start.UTC().Format(time.RFC3339)},
			{"Benchmarks", fmt.Sprint(cfg.benchmarks)},
			{"Entries", fmt.Sprint(cfg.num)},
			{"Keys, values", fmt.Sprintf("%d bytes, %d bytes (compression %s)", cfg.keySize, cfg.valueSize, cfg.compression)},
			{"Threads", fmt.Sprint(cfg.threads)},
			{"Seed", fmt.Sprint(cfg.seed)},
			{"DB", dir},
		},
	}

	// Throughput: one chart per benchmark, and the summary table.
	tp := report.Section{Heading: "Throughput over time (ops/s per one-second interval)"}
	summary := &report.Table{Header: []string{"benchmark", "ops", "seconds", "ops/s", "MB/s"}}
	for i, w := range rep.workloads {
		tp.Blocks = append(tp.Blocks, &report.LineChart{
			ID: fmt.Sprintf("throughput-%d-%s", i, w.name), Title: w.name + ": throughput",
			XLabel: "seconds since the benchmark's start", YLabel: "ops/s", XFromZero: true,
			Series: []report.Series{{Name: w.name, Points: w.throughput}},
		})
		secs := w.res.elapsed.Seconds()
		opsPerSec, mbPerSec := 0.0, 0.0
		if secs > 0 {
			opsPerSec, mbPerSec = float64(w.res.ops)/secs, float64(w.res.bytes)/(1<<20)/secs
		}
		summary.Rows = append(summary.Rows, []string{w.name, fmt.Sprint(w.res.ops), fmt.Sprintf("%.3f", secs),
			fmt.Sprintf("%.0f", opsPerSec), fmt.Sprintf("%.1f", mbPerSec)})
	}
	tp.Blocks = append(tp.Blocks, summary)

	// Latency percentiles: one bar per percentile and benchmark.
	lat := report.Section{Heading: "Latency percentiles (microseconds per op)"}
	bars := &report.BarChart{ID: "latency", Title: "Latency percentiles per benchmark", YLabel: "µs (log scale)", LogY: true}
	latTable := &report.Table{Header: []string{"benchmark", "ops timed"}}
	for _, pc := range latencyPercentiles {
		bars.Groups = append(bars.Groups, report.BarGroup{Name: pc.name})
		latTable.Header = append(latTable.Header, pc.name+" µs")
	}
	for _, w := range rep.workloads {
		h := w.res.hist
		if h == nil || h.TotalCount() == 0 {
			continue
		}
		bars.Categories = append(bars.Categories, w.name)
		row := []string{w.name, fmt.Sprint(h.TotalCount())}
		for g, pc := range latencyPercentiles {
			ns := h.Max()
			if pc.q < 100 {
				ns = h.ValueAtQuantile(pc.q)
			}
			us := float64(ns) / 1e3
			bars.Groups[g].Values = append(bars.Groups[g].Values, us)
			row = append(row, fmt.Sprintf("%.2f", us))
		}
		latTable.Rows = append(latTable.Rows, row)
	}
	lat.Blocks = append(lat.Blocks, bars, latTable)

	// Bytes written and compactions over the run.
	wr := report.Section{Heading: "Bytes written and compactions over the run"}
	var markers []report.Marker
	for _, w := range rep.workloads {
		markers = append(markers, report.Marker{X: w.startSec, Label: w.name})
	}
	series := func(name string, f func(c writeCounters) float64) report.Series {
		s := report.Series{Name: name}
		for _, smp := range rep.timeline {
			s.Points = append(s.Points, report.Point{X: smp.sec, Y: f(smp.c)})
		}
		return s
	}
	mib := func(v uint64) float64 { return float64(v) / (1 << 20) }
	wr.Blocks = append(wr.Blocks,
		&report.LineChart{ID: "bytes-written", Title: "Bytes written (cumulative)", XLabel: "seconds since the run's start", YLabel: "MiB",
			Markers: markers, Series: []report.Series{
				series("WAL", func(c writeCounters) float64 { return mib(c.wal) }),
				series("flushes", func(c writeCounters) float64 { return mib(c.flush) }),
				series("compactions", func(c writeCounters) float64 { return mib(c.compact) }),
			}},
		&report.LineChart{ID: "compactions", Title: "Flushes, compactions and write stalls (cumulative)", XLabel: "seconds since the run's start", YLabel: "count",
			Markers: markers, Series: []report.Series{
				series("flushes", func(c writeCounters) float64 { return float64(c.flushes) }),
				series("compactions", func(c writeCounters) float64 { return float64(c.compactions) }),
				series("write stalls", func(c writeCounters) float64 { return float64(c.stalls) }),
			}},
		&report.LineChart{ID: "l0-files", Title: "L0 files", XLabel: "seconds since the run's start", YLabel: "files",
			Markers: markers, Series: []report.Series{
				series("L0 files", func(c writeCounters) float64 { return float64(c.l0Files) }),
			}},
	)

	// The LSM's shape at the end.
	shape := report.Section{Heading: "LSM shape at the end of the run"}
	files := &report.BarChart{ID: "shape-files", Title: "Files per level", YLabel: "files", Groups: []report.BarGroup{{Name: "files"}}}
	size := &report.BarChart{ID: "shape-bytes", Title: "Bytes per level", YLabel: "MiB", Groups: []report.BarGroup{{Name: "MiB"}}}
	shapeTable := &report.Table{Header: []string{"level", "files", "bytes", "entries", "deletions", "score"}}
	for i, l := range rep.shape {
		name := fmt.Sprintf("L%d", i)
		files.Categories = append(files.Categories, name)
		size.Categories = append(size.Categories, name)
		files.Groups[0].Values = append(files.Groups[0].Values, float64(l.NumFiles))
		size.Groups[0].Values = append(size.Groups[0].Values, mib(l.Size))
		shapeTable.Rows = append(shapeTable.Rows, []string{name, fmt.Sprint(l.NumFiles), fmt.Sprint(l.Size),
			fmt.Sprint(l.NumEntries), fmt.Sprint(l.NumDeletions), fmt.Sprintf("%.2f", l.Score)})
	}
	shape.Blocks = append(shape.Blocks, files, size, shapeTable)
	p.Sections = append(p.Sections, tp, lat, wr, shape)
	return p
}

// reportFile is the --report file, created (truncated) before the run so
// that a bad path fails at once rather than after the benchmarks.
type reportFile struct {
	fs   vfs.FS
	path string
	f    vfs.File
}

func createReportFile(path string) (*reportFile, error) {
	f, err := vfs.Default.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--report: %w", err)
	}
	return &reportFile{fs: vfs.Default, path: path, f: f}, nil
}

// write writes the page and closes the file.
func (rf *reportFile) write(p *report.Page) error {
	err := p.WriteHTML(rf.f)
	if cerr := rf.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("--report %s: %w", rf.path, err)
	}
	return nil
}

// abandon closes and removes the file of a run that failed.
func (rf *reportFile) abandon() {
	_ = rf.f.Close()
	_ = rf.fs.Remove(rf.path)
}

// expectedOps is the ops benchmark spec should finish over its threads,
// for the progress line's total and ETA: --num per thread for the writing
// benchmarks, --reads for the others; 0 (unknown) for the control
// benchmarks and under --duration.
func (r *benchRunner) expectedOps(spec benchSpec, threads int) int64 {
	if spec.control || r.cfg.duration > 0 {
		return 0
	}
	per := r.cfg.reads
	switch spec.op {
	case opWrite, opDelete:
		per = r.cfg.num
	}
	return per * int64(threads)
}

// progressLineOut is where benchmark spec draws its progress line: the
// terminal of cfg.progressOut, except for the benchmarks that print their
// own lines while they run (ownOutput) and under --stats_interval_seconds,
// whose lines would land in the middle of it; nil for none.
func (r *benchRunner) progressLineOut(spec benchSpec) io.Writer {
	if spec.ownOutput || r.cfg.statsInterval > 0 {
		return nil
	}
	return r.cfg.progressOut
}
