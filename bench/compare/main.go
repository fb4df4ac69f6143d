package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if err := mainErr(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

func mainErr(args []string, out, progress io.Writer) (err error) {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(progress)
	num := fs.Int64("num", 1000000, "number of keys")
	benchmarks := fs.String("benchmarks", "fillseq,fillrandom,readrandom,seekrandom", "comma-separated workloads: fillseq, fillrandom, readrandom, seekrandom, deletescan")
	dir := fs.String("dir", "", "parent directory of the two databases (default: a temporary directory, removed afterwards)")
	cacheSize := fs.Int64("cache_size", 8<<20, "block cache bytes, the same for both engines")
	shape := fs.Bool("shape", false, "print each engine's LSM shape after its runs")
	seed := fs.Uint64("seed", 1, "seed of the key choice")
	deleteWait := fs.Float64("delete_wait", 10, "deletescan: seconds of idle time between the deletes and the second scan")
	walBG := fs.Bool("shale_wal_background_writes", true, "run shale with Options.WALBackgroundWrites, the WAL behaviour Pebble has (a non-sync write returns before its WAL record reaches the OS); false gives shale's default, where it has reached the OS")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *num < 1 || *num > 1e16 {
		return fmt.Errorf("--num must be between 1 and 1e16, got %d", *num)
	}
	var names []string
	for _, n := range strings.Split(*benchmarks, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if _, ok := workloads[n]; !ok {
			return fmt.Errorf("unknown workload %q", n)
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return errors.New("--benchmarks is empty")
	}
	root := *dir
	if root == "" {
		if root, err = os.MkdirTemp("", "shale-compare-"); err != nil {
			return err
		}
		defer func() {
			if rerr := os.RemoveAll(root); rerr != nil && err == nil {
				err = rerr
			}
		}()
	}
	if *deleteWait < 0 {
		return fmt.Errorf("--delete_wait must be >= 0, got %g", *deleteWait)
	}
	wcfg := workloadConfig{num: *num, keySize: 16, valueSize: 100, seed: *seed, deleteWait: time.Duration(*deleteWait * float64(time.Second))}
	ecfg := engineConfig{cacheSize: *cacheSize, writeBufferSize: 64 << 20, bloomBits: 10, shaleWALBackgroundWrites: *walBG}
	engines := []struct {
		name string
		open opener
	}{{"shale", openShale}, {"pebble", openPebble}}
	results := make([][]result, len(engines))
	for e, eng := range engines {
		s := newSession(eng.open, filepath.Join(root, eng.name), wcfg, ecfg)
		for _, n := range names {
			r, err := s.run(n)
			if err != nil {
				s.close()
				return fmt.Errorf("%s %s: %w", eng.name, n, err)
			}
			if r.phases != nil {
				for _, p := range r.phases {
					fmt.Fprintf(progress, "%-7s %-11s %-24s %12.3f ms\n", eng.name, n, p.name, float64(p.elapsed.Nanoseconds())/1e6)
				}
			} else {
				fmt.Fprintf(progress, "%-7s %-11s %12.0f ops/sec\n", eng.name, n, r.opsPerSec())
			}
			results[e] = append(results[e], r)
		}
		if *shape && s.eng != nil {
			fmt.Fprintf(progress, "%s LSM after the run:\n%s\n", eng.name, s.eng.shape())
		}
		if err := s.close(); err != nil {
			return fmt.Errorf("%s: close: %w", eng.name, err)
		}
		if *dir == "" {
			if err := removeAll(s.dir); err != nil {
				return err
			}
		}
	}
	printTable(out, names, results[0], results[1])
	return nil
}

// printTable prints workload, shale ops/sec, pebble ops/sec and their
// ratio, then, for the workloads timed in phases (deletescan), each
// phase's milliseconds and their ratio.
func printTable(w io.Writer, names []string, shaleRes, pebbleRes []result) {
	header := true
	for i, n := range names {
		if shaleRes[i].phases != nil {
			continue
		}
		if header {
			fmt.Fprintf(w, "%-12s %16s %16s %14s\n", "workload", "shale ops/sec", "pebble ops/sec", "shale/pebble")
			header = false
		}
		a, b := shaleRes[i].opsPerSec(), pebbleRes[i].opsPerSec()
		ratio := "-"
		if b > 0 {
			ratio = fmt.Sprintf("%.2f", a/b)
		}
		fmt.Fprintf(w, "%-12s %16.0f %16.0f %14s\n", n, a, b, ratio)
	}
	for i, n := range names {
		if shaleRes[i].phases == nil {
			continue
		}
		fmt.Fprintf(w, "%-12s %-24s %12s %12s %14s\n", n, "phase", "shale ms", "pebble ms", "shale/pebble")
		for j, p := range shaleRes[i].phases {
			a := float64(p.elapsed.Nanoseconds()) / 1e6
			var b float64
			if j < len(pebbleRes[i].phases) {
				b = float64(pebbleRes[i].phases[j].elapsed.Nanoseconds()) / 1e6
			}
			ratio := "-"
			if b > 0 {
				ratio = fmt.Sprintf("%.2f", a/b)
			}
			fmt.Fprintf(w, "%-12s %-24s %12.3f %12.3f %14s\n", n, p.name, a, b, ratio)
		}
	}
}

func removeAll(dir string) error { return os.RemoveAll(dir) }
