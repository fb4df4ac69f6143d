package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shaledb/shale/internal/report"
)

// isHTMLReport says whether --report names an HTML page (a name ending in
// .html or .htm) rather than the markdown tables.
func isHTMLReport(path string) bool {
	p := strings.ToLower(path)
	return strings.HasSuffix(p, ".html") || strings.HasSuffix(p, ".htm")
}

// comparePage builds the HTML report of a comparison: per workload the
// engines side by side (throughput, its ratio to shale's, latency
// percentiles, throughput per second), then each process's resources and
// each engine's own account of its LSM after the run.
func comparePage(names []string, cfg workloadConfig, engines []string, results [][]result, res []engineResources, shapes []string) *report.Page {
	p := &report.Page{
		Title: "bench/compare report",
		Meta: [][2]string{
			{"Engines", strings.Join(engines, ", ")},
			{"Workloads", strings.Join(names, ", ")},
			{"Keys", fmt.Sprint(cfg.num)},
			{"Values", fmt.Sprintf("%d bytes", cfg.valueSize)},
			{"Seed", fmt.Sprint(cfg.seed)},
		},
	}
	shale := slices.Index(engines, "shale")

	// Throughput and its ratio to shale's.
	tp := report.Section{Heading: "Throughput (ops/s) and ratio to shale"}
	bars := &report.BarChart{ID: "throughput", Title: "Throughput per workload", YLabel: "ops/s (log scale)", LogY: true}
	ratios := &report.BarChart{ID: "ratio-to-shale", Title: "Throughput relative to shale (engine / shale)", YLabel: "ratio (log scale)", LogY: true}
	table := &report.Table{Header: []string{"workload"}}
	for _, e := range engines {
		bars.Groups = append(bars.Groups, report.BarGroup{Name: e})
		ratios.Groups = append(ratios.Groups, report.BarGroup{Name: e})
		table.Header = append(table.Header, e+" ops/s")
	}
	if shale >= 0 {
		for _, e := range engines {
			if e != "shale" {
				table.Header = append(table.Header, e+" / shale")
			}
		}
	}
	var timed []int // workloads with timed operations (not deletescan's phases)
	for i, n := range names {
		if results[0][i].phases != nil {
			continue
		}
		timed = append(timed, i)
		label := workloadLabel(n, cfg)
		bars.Categories = append(bars.Categories, n)
		ratios.Categories = append(ratios.Categories, n)
		row := []string{label}
		for e := range engines {
			ops := results[e][i].opsPerSec()
			bars.Groups[e].Values = append(bars.Groups[e].Values, ops)
			ratio := 0.0
			if shale >= 0 {
				if base := results[shale][i].opsPerSec(); base > 0 {
					ratio = ops / base
				}
			}
			ratios.Groups[e].Values = append(ratios.Groups[e].Values, ratio)
			row = append(row, fmt.Sprintf("%.0f", ops))
		}
		if shale >= 0 {
			for e, eng := range engines {
				if eng != "shale" {
					row = append(row, fmt.Sprintf("%.2f", ratios.Groups[e].Values[len(ratios.Groups[e].Values)-1]))
				}
			}
		}
		table.Rows = append(table.Rows, row)
	}
	tp.Blocks = append(tp.Blocks, bars)
	if shale >= 0 {
		tp.Blocks = append(tp.Blocks, ratios)
	}
	tp.Blocks = append(tp.Blocks, table)

	// Latency percentiles: a chart per workload, the engines side by side.
	lat := report.Section{Heading: "Latency percentiles (microseconds per op)"}
	percentiles := []string{"p50", "p90", "p99", "p99.9", "max"}
	latTable := &report.Table{Header: append([]string{"workload", "engine"}, percentiles...)}
	for _, i := range timed {
		chart := &report.BarChart{ID: "latency-" + names[i], Title: workloadLabel(names[i], cfg) + ": latency", YLabel: "µs (log scale)", LogY: true, Categories: percentiles}
		for e, eng := range engines {
			r := results[e][i]
			vals := []float64{micros(r.p50), micros(r.p90), micros(r.p99), micros(r.p999), micros(r.max)}
			chart.Groups = append(chart.Groups, report.BarGroup{Name: eng, Values: vals})
			row := []string{names[i], eng}
			for _, v := range vals {
				row = append(row, fmt.Sprintf("%.2f", v))
			}
			latTable.Rows = append(latTable.Rows, row)
		}
		lat.Blocks = append(lat.Blocks, chart)
	}
	lat.Blocks = append(lat.Blocks, latTable)

	// Throughput over time: a chart per workload, a line per engine.
	over := report.Section{Heading: "Throughput over time (ops/s per one-second interval)"}
	for _, i := range timed {
		chart := &report.LineChart{ID: "throughput-" + names[i], Title: workloadLabel(names[i], cfg) + ": throughput over time",
			XLabel: "seconds since the workload's start", YLabel: "ops/s", XFromZero: true}
		for e, eng := range engines {
			s := report.Series{Name: eng}
			for _, pt := range results[e][i].throughput {
				s.Points = append(s.Points, report.Point{X: pt.Sec, Y: pt.OpsPerSec})
			}
			chart.Series = append(chart.Series, s)
		}
		over.Blocks = append(over.Blocks, chart)
	}
	p.Sections = append(p.Sections, tp, lat, over)

	// deletescan's phases, when it ran.
	for i, n := range names {
		if results[0][i].phases == nil {
			continue
		}
		ph := report.Section{Heading: n + " phases (ms)"}
		t := &report.Table{Header: append([]string{"phase"}, engines...)}
		for k, phase := range results[0][i].phases {
			row := []string{phase.name}
			for e := range engines {
				if k < len(results[e][i].phases) {
					row = append(row, fmt.Sprintf("%.3f", float64(results[e][i].phases[k].elapsed)/float64(time.Millisecond)))
				} else {
					row = append(row, "")
				}
			}
			t.Rows = append(t.Rows, row)
		}
		ph.Blocks = append(ph.Blocks, t)
		p.Sections = append(p.Sections, ph)
	}

	// Resources and the LSM shape.
	rs := report.Section{Heading: "Resources and LSM shape after the run"}
	rt := &report.Table{Header: []string{"engine", "peak RSS MiB", "bytes written to storage MiB"}}
	unknown := func(v int64, div float64) string {
		if v < 0 {
			return "unknown"
		}
		return fmt.Sprintf("%.1f", float64(v)/div)
	}
	for e, eng := range engines {
		rt.Rows = append(rt.Rows, []string{eng, unknown(res[e].peakRSSKiB, 1024), unknown(res[e].writeBytes, 1<<20)})
	}
	rs.Blocks = append(rs.Blocks, rt)
	for e, eng := range engines {
		if e < len(shapes) && shapes[e] != "" {
			rs.Blocks = append(rs.Blocks, report.Pre{Caption: eng, Text: shapes[e]})
		}
	}
	p.Sections = append(p.Sections, rs)
	return p
}
