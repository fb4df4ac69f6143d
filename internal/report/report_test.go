package report

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestTicksAreNiceAndCoverTheRange(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		n      int
		want   []float64
	}{
		{0, 10, 6, []float64{0, 2, 4, 6, 8, 10}},
		{0, 97, 6, []float64{0, 20, 40, 60, 80, 100}},
		{3, 7, 5, []float64{3, 4, 5, 6, 7}},
		{0, 1, 6, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{-5, 5, 3, []float64{-5, 0, 5}},
		{0, 1234567, 6, []float64{0, 500000, 1e6, 1.5e6}},
		{0, 0.003, 4, []float64{0, 0.001, 0.002, 0.003}},
	} {
		got := Ticks(tc.lo, tc.hi, tc.n)
		if !slices.Equal(got, tc.want) {
			t.Errorf("Ticks(%g, %g, %d) = %v, want %v", tc.lo, tc.hi, tc.n, got, tc.want)
		}
	}
}

func TestTicksOfOneValueWidenTheRange(t *testing.T) {
	for _, v := range []float64{0, 5, -3, 1e12} {
		got := Ticks(v, v, 6)
		if len(got) < 2 || got[0] > v || got[len(got)-1] < v || got[0] == got[len(got)-1] {
			t.Errorf("Ticks(%g, %g) = %v: want at least two ticks around the value", v, v, got)
		}
		if v >= 0 && got[0] < 0 {
			t.Errorf("Ticks(%g, %g) = %v: a non-negative value's axis starts below zero", v, v, got)
		}
	}
}

func TestTicksOfHugeAndBrokenRangesStayBounded(t *testing.T) {
	for _, tc := range [][2]float64{
		{0, math.MaxFloat64}, {-math.MaxFloat64, math.MaxFloat64}, {1e300, 1e300 + 1e285},
		{math.NaN(), 1}, {0, math.Inf(1)}, {1e18, 1e18 + 1}, {0, 9.2e18},
	} {
		got := Ticks(tc[0], tc[1], 6)
		if len(got) < 2 || len(got) > maxTicks {
			t.Errorf("Ticks(%g, %g) = %d ticks, want 2..%d", tc[0], tc[1], len(got), maxTicks)
		}
		for _, v := range got {
			if !finite(v) {
				t.Errorf("Ticks(%g, %g) = %v: not finite", tc[0], tc[1], got)
			}
		}
		if !slices.IsSorted(got) {
			t.Errorf("Ticks(%g, %g) = %v: not sorted", tc[0], tc[1], got)
		}
	}
}

func TestLogTicksArePowersOfTen(t *testing.T) {
	if got, want := LogTicks(3, 4500), []float64{1, 10, 100, 1000, 10000}; !slices.Equal(got, want) {
		t.Errorf("LogTicks(3, 4500) = %v, want %v", got, want)
	}
	if got := LogTicks(1e-300, 1e300); len(got) > maxTicks+1 || got[0] > 1e-300 || got[len(got)-1] < 1e300 {
		t.Errorf("LogTicks(1e-300, 1e300) = %v: want at most %d ticks covering the range", got, maxTicks+1)
	}
	if got := LogTicks(7, 7); len(got) != 2 || got[0] != 1 || got[1] != 10 {
		t.Errorf("LogTicks(7, 7) = %v, want [1 10]", got)
	}
}

func TestFormatNumber(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 12: "12", 0.25: "0.25", 1500: "1.5k", 999: "999", 999.7: "1k", 2.5e6: "2.5M",
		3.2e9: "3.2G", 1e18: "1E", -4000: "-4k", 1e21: "1e+21", math.Inf(1): "+Inf", 1e-7: "1e-07",
	} {
		if got := FormatNumber(v); got != want {
			t.Errorf("FormatNumber(%g) = %q, want %q", v, got, want)
		}
	}
}

// datums counts the data marks of an HTML fragment.
var datumRE = regexp.MustCompile(`class="datum"`)

func render(b Block) string {
	var sb strings.Builder
	b.writeHTML(&sb)
	return sb.String()
}

func TestLineChartDrawsAMarkPerFinitePoint(t *testing.T) {
	c := &LineChart{ID: "tp", Title: "throughput", Series: []Series{
		{Name: "a", Points: []Point{{0, 1}, {1, 2}, {2, math.NaN()}, {3, 4}}},
		{Name: "b", Points: []Point{{0, 5}}},
	}}
	h := render(c)
	if got := len(datumRE.FindAllString(h, -1)); got != 4 || c.Points() != 4 {
		t.Errorf("marks = %d, Points() = %d, want 4 and 4:\n%s", got, c.Points(), h)
	}
	if !strings.Contains(h, `data-points="4"`) || strings.Count(h, "<polyline") != 1 {
		t.Errorf("want data-points=4 and one polyline (series b has one point):\n%s", h)
	}
	if strings.Contains(h, "NaN") {
		t.Errorf("a NaN reached the SVG:\n%s", h)
	}
}

func TestChartsWithoutDataSayNoData(t *testing.T) {
	for _, b := range []Block{
		&LineChart{ID: "e", Title: "empty"},
		&LineChart{ID: "e", Series: []Series{{Name: "s"}}},
		&BarChart{ID: "e", Categories: []string{"x"}},
		&BarChart{ID: "e", Categories: []string{"x"}, Groups: []BarGroup{{Name: "g", Values: []float64{0}}}, LogY: true},
	} {
		h := render(b)
		if !strings.Contains(h, emptyText) || !strings.Contains(h, `data-points="0"`) || datumRE.MatchString(h) {
			t.Errorf("empty chart: want %q, data-points=0 and no marks:\n%s", emptyText, h)
		}
	}
}

func TestOnePointChartIsDrawnInsideThePlot(t *testing.T) {
	h := render(&LineChart{ID: "one", Series: []Series{{Name: "s", Points: []Point{{5, 7}}}}})
	m := regexp.MustCompile(`<circle class="datum" cx="([0-9.]+)" cy="([0-9.]+)"`).FindStringSubmatch(h)
	if m == nil {
		t.Fatalf("no mark:\n%s", h)
	}
	if m[1] == "NaN" || m[2] == "NaN" {
		t.Fatalf("mark at NaN:\n%s", h)
	}
	var cx, cy float64
	_, _ = fmtSscan(m[1], &cx), fmtSscan(m[2], &cy)
	if cx < marginL || cx > marginL+plotW || cy < marginT || cy > marginT+plotH {
		t.Errorf("the one point is at (%g, %g), outside the plot area", cx, cy)
	}
}

func TestHugeValuesStayInsideThePlot(t *testing.T) {
	c := &LineChart{ID: "huge", Series: []Series{{Name: "s", Points: []Point{{0, 1}, {1, 9.2e18}, {2, math.MaxFloat64 / 4}}}}}
	h := render(c)
	for _, m := range regexp.MustCompile(`cy="([^"]+)"`).FindAllStringSubmatch(h, -1) {
		var cy float64
		if err := fmtSscan(m[1], &cy); err != nil || cy < marginT-0.5 || cy > marginT+plotH+0.5 {
			t.Errorf("cy=%s outside the plot (or unparsable):\n%s", m[1], h)
		}
	}
	b := render(&BarChart{ID: "hb", Categories: []string{"a", "b"}, Groups: []BarGroup{{Name: "g", Values: []float64{1, 1e300}}}, LogY: true})
	if strings.Contains(b, "NaN") || strings.Contains(b, "Inf") || len(datumRE.FindAllString(b, -1)) != 2 {
		t.Errorf("log bar chart of huge values:\n%s", b)
	}
}

func TestNamesAreEscaped(t *testing.T) {
	evil := `<script>alert("x")</script>&'`
	p := &Page{
		Title: evil,
		Meta:  [][2]string{{evil, evil}},
		Sections: []Section{{Heading: evil, Blocks: []Block{
			&LineChart{ID: evil, Title: evil, XLabel: evil, YLabel: evil, Series: []Series{{Name: evil, Points: []Point{{0, 1}, {1, 2}}}}, Markers: []Marker{{X: 0.5, Label: evil}}},
			&BarChart{ID: evil, Title: evil, Categories: []string{evil}, Groups: []BarGroup{{Name: evil, Values: []float64{3}}}},
			&Table{Caption: evil, Header: []string{evil}, Rows: [][]string{{evil}}},
			Text(evil),
		}}},
	}
	h := p.HTML()
	if strings.Contains(h, "<script>alert") || strings.Contains(h, `"x")`) {
		t.Errorf("an unescaped name reached the page:\n%s", h)
	}
	if strings.Count(h, "<script>") != 1 {
		t.Errorf("want exactly the page's own script, got %d", strings.Count(h, "<script>"))
	}
	if !strings.Contains(h, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&amp;&#39;") {
		t.Errorf("escaped name missing:\n%s", h)
	}
}

func TestPageIsSelfContained(t *testing.T) {
	p := &Page{Title: "t", Sections: []Section{{Heading: "h", Blocks: []Block{
		&LineChart{ID: "a", Series: []Series{{Name: "s", Points: []Point{{0, 1}, {1, 2}}}}},
		&Table{Header: []string{"x"}, Rows: [][]string{{"1"}}},
		&BarChart{ID: "b", Categories: []string{"c"}, Groups: []BarGroup{{Name: "g", Values: []float64{1}}}},
	}}}}
	h := p.HTML()
	for _, bad := range []string{"http://", "https://", "src=", "href=", "@import", "url("} {
		if strings.Contains(strings.ReplaceAll(h, `xmlns="http://www.w3.org/2000/svg"`, ""), bad) {
			t.Errorf("page refers to something outside it (%q)", bad)
		}
	}
	if got := len(p.Plots()); got != 2 {
		t.Errorf("Plots() = %d, want 2", got)
	}
	// Charts share a flex container, closed before the table.
	if strings.Count(h, `<div class="plots">`) != 2 || strings.Count(h, "</div>") != 2 {
		t.Errorf("want two plot containers around the table:\n%s", h)
	}
}

func fmtSscan(s string, v *float64) error {
	f, err := strconv.ParseFloat(s, 64)
	*v = f
	return err
}

func TestXFromZeroStartsTheAxisAtZero(t *testing.T) {
	c := &LineChart{ID: "z", Series: []Series{{Name: "s", Points: []Point{{0.7, 3}}}}, XFromZero: true}
	h := render(c)
	if !strings.Contains(h, `text-anchor="middle">0</text>`) {
		t.Errorf("want an x tick at 0:\n%s", h)
	}
	c.XFromZero = false
	if h := render(c); strings.Contains(h, `text-anchor="middle">0</text>`) {
		t.Errorf("an x tick at 0 without XFromZero:\n%s", h)
	}
}

func TestLogBarChartHasATickPerPowerOfTen(t *testing.T) {
	h := render(&BarChart{ID: "l", Categories: []string{"a", "b"}, Groups: []BarGroup{{Name: "g", Values: []float64{2, 50000}}}, LogY: true})
	var got []string
	for _, m := range regexp.MustCompile(`class="tick"[^>]*>([^<]*)<`).FindAllStringSubmatch(h, -1) {
		got = append(got, m[1])
	}
	if want := []string{"1", "10", "100", "1k", "10k", "100k"}; !slices.Equal(got, want) {
		t.Errorf("log axis ticks = %v, want %v", got, want)
	}
}
