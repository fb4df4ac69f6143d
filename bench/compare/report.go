package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// engineResources is what one engine's process used.
type engineResources struct {
	peakRSSKiB int64 // -1: unknown
	writeBytes int64 // -1: unknown
	size       diskSize
}

// workloadLabel names a workload in the markdown table with the flags that
// shape it.
func workloadLabel(name string, cfg workloadConfig) string {
	if mix, ok := ycsbMixes[name]; ok {
		return fmt.Sprintf("%s (%s; %d threads)", name, mix.summary, cfg.ycsbThreads())
	}
	switch {
	case name == "ycsb_load":
		return fmt.Sprintf("ycsb_load (%d records of %d×%d B; %d threads)", cfg.ycsb.records, cfg.ycsb.fields, cfg.ycsb.fieldLength, cfg.ycsbThreads())
	case (name == "fillseq" || name == "fillrandom" || name == "overwrite" || name == "fillsync") && cfg.fillWriters() > 1:
		return fmt.Sprintf("%s (%d writers)", name, cfg.fillWriters())
	case name == "readrandom" && cfg.readThreads() > 1:
		return fmt.Sprintf("readrandom (%d threads)", cfg.readThreads())
	case name == "readwhilewriting" && cfg.readThreads() > 1:
		return fmt.Sprintf("readwhilewriting (%d readers)", cfg.readThreads())
	case name == "readwhilewriting":
		return "readwhilewriting (1 reader)"
	case name == "multireadrandom":
		return fmt.Sprintf("multireadrandom (batch %d)", cfg.batchSize)
	case name == "seekrandom" && cfg.seekNexts > 0:
		return fmt.Sprintf("seekrandom (+%d next)", cfg.seekNexts)
	}
	return name
}

// printMarkdown prints the results as markdown tables: per workload and
// engine the throughput, latency percentiles and, on shale's row, its
// throughput over the best peer's; deletescan's phases; then each engine
// process's peak memory, bytes written and directory size.
func printMarkdown(w io.Writer, names []string, cfg workloadConfig, engines []string, results [][]result, res []engineResources) {
	shale := slices.Index(engines, "shale")
	header := true
	var writes []string
	for i, n := range names {
		if results[0][i].phases != nil {
			continue
		}
		if header {
			fmt.Fprintln(w, "| workload | engine | ops/s | p50 µs | p99 µs | shale / best peer |")
			fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|")
			header = false
		}
		best := bestPeer(engines, shale, func(e int) float64 { return results[e][i].opsPerSec() }, true)
		for e, eng := range engines {
			r := results[e][i]
			vs := ""
			if e == shale && best >= 0 {
				vs = fmt.Sprintf("%s (%s)", ratio(r.opsPerSec(), results[best][i].opsPerSec()), engines[best])
			}
			fmt.Fprintf(w, "| %s | %s | %.0f | %s | %s | %s |\n", workloadLabel(n, cfg), eng, r.opsPerSec(), latencyCell(r.p50), latencyCell(r.p99), vs)
			if n == "readwhilewriting" {
				writes = append(writes, fmt.Sprintf("%s %d", eng, r.writes))
			}
		}
	}
	var notes []string
	if slices.Contains(names, "multireadrandom") {
		notes = append(notes, "multireadrandom's ops/s are keys/s, its latencies those of one batch.")
	}
	if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "ycsb_") }) {
		notes = append(notes, "The ycsb workloads' ops/s and latencies are of YCSB operations: a read, update, insert, scan or read-modify-write is one.")
	}
	if len(writes) > 0 {
		notes = append(notes, fmt.Sprintf("readwhilewriting counts its readers' reads; the writer wrote meanwhile: %s.", strings.Join(writes, ", ")))
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "\n"))
	}
	printPhasesMarkdown(w, names, engines, results, shale)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| engine | peak RSS MiB | written MiB | file MiB | allocated MiB |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|")
	for e, eng := range engines {
		r := res[e]
		fmt.Fprintf(w, "| %s | %s | %s | %.1f | %.1f |\n", eng, mib(r.peakRSSKiB, 1<<10), mib(r.writeBytes, 1), float64(r.size.bytes)/(1<<20), float64(r.size.allocated)/(1<<20))
	}
}

// printPhasesMarkdown prints the phased workloads (deletescan): each
// phase's milliseconds per engine and shale's over the fastest peer's.
func printPhasesMarkdown(w io.Writer, names, engines []string, results [][]result, shale int) {
	for i, n := range names {
		if results[0][i].phases == nil {
			continue
		}
		fmt.Fprintf(w, "\n| %s phase | %s | shale / best peer |\n", n, strings.Join(engines, " ms | ")+" ms")
		fmt.Fprintf(w, "|---|%s--:|\n", strings.Repeat("--:|", len(engines)))
		for j, p := range results[0][i].phases {
			ms := func(e int) float64 {
				if j < len(results[e][i].phases) {
					return float64(results[e][i].phases[j].elapsed.Nanoseconds()) / 1e6
				}
				return 0
			}
			fmt.Fprintf(w, "| %s |", p.name)
			for e := range engines {
				fmt.Fprintf(w, " %.3f |", ms(e))
			}
			vs := ""
			if best := bestPeer(engines, shale, ms, false); best >= 0 {
				vs = fmt.Sprintf("%s (%s)", ratio(ms(shale), ms(best)), engines[best])
			}
			fmt.Fprintf(w, " %s |\n", vs)
		}
	}
}

// bestPeer is the engine other than shale with the highest (or, when
// !higher, the lowest positive) value, or -1 when shale did not run or
// no peer did.
func bestPeer(engines []string, shale int, value func(e int) float64, higher bool) int {
	best := -1
	if shale < 0 {
		return best
	}
	for e := range engines {
		v := value(e)
		if e == shale || v <= 0 {
			continue
		}
		if best < 0 || (higher && v > value(best)) || (!higher && v < value(best)) {
			best = e
		}
	}
	return best
}

// ratio is a/b to two decimals, or "-" without a b.
func ratio(a, b float64) string {
	if b > 0 {
		return fmt.Sprintf("%.2f", a/b)
	}
	return "-"
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// latencyCell is d in microseconds, or "-" for a workload timing no
// operations.
func latencyCell(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", micros(d))
}

// mib is n units of unit bytes in MiB, or "-" for an unknown (negative) n.
func mib(n, unit int64) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(n)*float64(unit)/(1<<20))
}
