package main

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestComparePageShowsEnginesSideBySide checks the HTML report: every plot
// has data, the ratio to shale of each engine (shale's own is 1), the
// percentiles per engine, and the shapes, escaped.
func TestComparePageShowsEnginesSideBySide(t *testing.T) {
	tp := []throughputPoint{{1, 90}, {2, 110}}
	results := [][]result{
		{{ops: 200, elapsed: 2e9, p50: 1000, p90: 1500, p99: 2500, p999: 9000, max: 20000, throughput: tp}, {phases: []phase{{"after deletes", 2e6}}}},
		{{ops: 100, elapsed: 2e9, p50: 2000, p90: 2500, p99: 4000, p999: 8000, max: 30000, throughput: tp}, {phases: []phase{{"after deletes", 4e6}}}},
	}
	res := []engineResources{{peakRSSKiB: 2048, writeBytes: 3 << 20}, {peakRSSKiB: -1, writeBytes: -1}}
	page := comparePage([]string{"fillrandom", "deletescan"}, workloadConfig{num: 10}, []string{"shale", "pebble"}, results, res, []string{"L0 <1 file>", ""})
	html := page.HTML()
	plots := map[string]int{}
	for _, m := range regexp.MustCompile(`data-plot="([^"]*)" data-points="(\d+)"`).FindAllStringSubmatch(html, -1) {
		plots[m[1]], _ = strconv.Atoi(m[2])
	}
	for name, want := range map[string]int{
		"throughput":            2,  // one workload timed, two engines
		"ratio-to-shale":        2,  // shale's 1 and pebble's 0.5
		"latency-fillrandom":    10, // five percentiles, two engines
		"throughput-fillrandom": 4,  // two seconds, two engines
	} {
		if plots[name] != want {
			t.Errorf("plot %s has %d marks, want %d (all: %v)", name, plots[name], want, plots)
		}
	}
	for _, want := range []string{"<td>fillrandom</td><td>100</td><td>50</td><td>0.50</td>", "L0 &lt;1 file&gt;", "<td>after deletes</td><td>2.000</td><td>4.000</td>",
		"<td>pebble</td><td>unknown</td><td>unknown</td>"} {
		if !strings.Contains(html, want) {
			t.Errorf("no %q in the page", want)
		}
	}
}

func TestThroughputPointsEndWithThePartialSecond(t *testing.T) {
	got := throughputPoints([]int64{100, 100, 25}, 2250*time.Millisecond)
	want := []throughputPoint{{1, 100}, {2, 100}, {2.25, 100}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// A sliver of a last second is left out; a run shorter than a second
	// keeps its one point.
	if got := throughputPoints([]int64{100, 1}, 1010*time.Millisecond); len(got) != 1 {
		t.Errorf("sliver kept: %v", got)
	}
	if got := throughputPoints([]int64{50}, 500*time.Millisecond); !slices.Equal(got, []throughputPoint{{0.5, 100}}) {
		t.Errorf("short run: %v", got)
	}
}

func TestOpTimerCountsOpsPerSecond(t *testing.T) {
	tm := newOpTimer()
	tm.origin = time.Now().Add(-1500 * time.Millisecond) // 1.5 s ago
	tm.done()
	tm.done()
	if !slices.Equal(tm.perSec, []int64{0, 2}) {
		t.Errorf("perSec = %v, want [0 2]", tm.perSec)
	}
	r := result{elapsed: 2 * time.Second}
	setLatency(&r, tm)
	if r.p50 <= 0 || r.max < r.p999 || r.p999 < r.p99 || r.p99 < r.p90 || r.p90 < r.p50 || len(r.throughput) != 2 {
		t.Errorf("setLatency: %+v", r)
	}
}

func TestIsHTMLReport(t *testing.T) {
	for p, want := range map[string]bool{"out.html": true, "OUT.HTM": true, "out.md": false, "": false, "html": false} {
		if got := isHTMLReport(p); got != want {
			t.Errorf("isHTMLReport(%q) = %v", p, got)
		}
	}
}
