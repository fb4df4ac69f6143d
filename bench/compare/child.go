package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"
)

// childEngineFlag names the flag with which compare runs itself once per
// engine: the child process runs every workload on that one engine and
// writes an engineReport to its stdout, so that each engine's peak memory
// and bytes written are its own.
const childEngineFlag = "child_engine"

// engineReport is what a child process writes to its stdout, as JSON.
type engineReport struct {
	// Results are the workloads' results, in --benchmarks order.
	Results []resultJSON `json:"results"`
	// WriteBytes is the bytes the child caused to be written to storage
	// (Linux's write_bytes), read once the engine is closed; -1 where the
	// platform does not count them.
	WriteBytes int64 `json:"write_bytes"`
	// Shape is the engine's account of its LSM after the run, for an HTML
	// --report ("" otherwise).
	Shape string `json:"shape,omitempty"`
}

// resultJSON is a result as it crosses from a child to its parent.
type resultJSON struct {
	Ops       int64       `json:"ops"`
	Found     int64       `json:"found"`
	Writes    int64       `json:"writes,omitempty"`
	ElapsedNS int64       `json:"elapsed_ns"`
	P50NS     int64       `json:"p50_ns"`
	P99NS     int64       `json:"p99_ns"`
	Phases    []phaseJSON `json:"phases,omitempty"`
	// The rest is for --report.
	P90NS      int64             `json:"p90_ns,omitempty"`
	P999NS     int64             `json:"p999_ns,omitempty"`
	MaxNS      int64             `json:"max_ns,omitempty"`
	Throughput []throughputPoint `json:"throughput,omitempty"`
}

// phaseJSON is a phase as it crosses from a child to its parent.
type phaseJSON struct {
	Name      string `json:"name"`
	ElapsedNS int64  `json:"elapsed_ns"`
}

func (r result) toJSON() resultJSON {
	j := resultJSON{Ops: r.ops, Found: r.found, Writes: r.writes, ElapsedNS: int64(r.elapsed), P50NS: int64(r.p50), P99NS: int64(r.p99),
		P90NS: int64(r.p90), P999NS: int64(r.p999), MaxNS: int64(r.max), Throughput: r.throughput}
	for _, p := range r.phases {
		j.Phases = append(j.Phases, phaseJSON{p.name, int64(p.elapsed)})
	}
	return j
}

func (j resultJSON) result() result {
	r := result{ops: j.Ops, found: j.Found, writes: j.Writes, elapsed: time.Duration(j.ElapsedNS), p50: time.Duration(j.P50NS), p99: time.Duration(j.P99NS),
		p90: time.Duration(j.P90NS), p999: time.Duration(j.P999NS), max: time.Duration(j.MaxNS), throughput: j.Throughput}
	for _, p := range j.Phases {
		r.phases = append(r.phases, phase{p.Name, time.Duration(p.ElapsedNS)})
	}
	return r
}

// runEngine runs the workloads names, in order, on one engine in
// root/NAME, printing each result to progress as it ends, and closes it.
// With keepShape it also returns the engine's own account of its LSM
// shape after the run (for the HTML report).
func runEngine(eng namedOpener, names []string, root string, wcfg workloadConfig, ecfg engineConfig, shape, keepShape bool, progress io.Writer) (_ []result, shapeText string, _ error) {
	s := newSession(eng.open, filepath.Join(root, eng.name), wcfg, ecfg)
	var results []result
	for _, n := range names {
		r, err := s.run(n)
		if err != nil {
			s.close()
			return nil, "", fmt.Errorf("%s %s: %w", eng.name, n, err)
		}
		printProgress(progress, eng.name, n, r)
		results = append(results, r)
	}
	if shape && s.eng != nil {
		fmt.Fprintf(progress, "%s LSM after the run:\n%s\n", eng.name, s.eng.shape())
	}
	if keepShape && s.eng != nil {
		shapeText = s.eng.shape()
	}
	if err := s.close(); err != nil {
		return nil, "", fmt.Errorf("%s: close: %w", eng.name, err)
	}
	return results, shapeText, nil
}

// printProgress prints one workload's result as it ends.
func printProgress(w io.Writer, engine, workload string, r result) {
	if r.phases != nil {
		for _, p := range r.phases {
			fmt.Fprintf(w, "%-9s %-16s %-24s %12.3f ms\n", engine, workload, p.name, float64(p.elapsed.Nanoseconds())/1e6)
		}
		return
	}
	fmt.Fprintf(w, "%-9s %-16s %12.0f ops/sec  p50 %9.2f us  p99 %9.2f us", engine, workload, r.opsPerSec(), micros(r.p50), micros(r.p99))
	if r.writes > 0 {
		fmt.Fprintf(w, "  (%d writes meanwhile)", r.writes)
	}
	fmt.Fprintln(w)
}

// writeEngineReport writes a child's results, bytes written and LSM shape
// to out.
func writeEngineReport(out io.Writer, results []result, shape string) error {
	rep := engineReport{WriteBytes: storageWriteBytes(), Shape: shape}
	for _, r := range results {
		rep.Results = append(rep.Results, r.toJSON())
	}
	return json.NewEncoder(out).Encode(rep)
}

// childRun is what the parent learns from one child process.
type childRun struct {
	results []result
	// peakRSSKiB is the child's peak resident set (-1: unknown).
	peakRSSKiB int64
	// writeBytes is engineReport.WriteBytes.
	writeBytes int64
	shape      string // engineReport.Shape
}

// runChild runs engine in a child process: this program again, with args
// and the flags that make it run that one engine in root. Its progress
// goes to progress as it runs.
func runChild(engine string, args []string, root string, progress io.Writer) (childRun, error) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	args = append(slices.Clip(args), "--"+childEngineFlag+"="+engine, "--dir="+root)
	cmd := exec.Command(exe, args...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, progress
	if err := cmd.Run(); err != nil {
		return childRun{}, fmt.Errorf("%s: child process: %w", engine, err)
	}
	var rep engineReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return childRun{}, fmt.Errorf("%s: child process's report: %w", engine, err)
	}
	run := childRun{peakRSSKiB: peakRSSKiB(cmd.ProcessState), writeBytes: rep.WriteBytes, shape: rep.Shape}
	for _, j := range rep.Results {
		run.results = append(run.results, j.result())
	}
	return run, nil
}
