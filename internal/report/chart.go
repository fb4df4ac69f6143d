package report

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Point is one point of a line chart's series.
type Point struct{ X, Y float64 }

// Series is one named line of a LineChart.
type Series struct {
	Name   string
	Points []Point
}

// Marker is a labelled vertical line of a LineChart at X (a workload's
// start, say).
type Marker struct {
	X     float64
	Label string
}

// LineChart is a chart of series of (x, y) points, each drawn as a line
// with a mark per point. Points with a non-finite coordinate are left out.
type LineChart struct {
	ID, Title      string // ID names the plot in the page's data-plots marker
	XLabel, YLabel string
	Series         []Series
	Markers        []Marker
	// XFromZero extends the x axis to zero (time since a start, say).
	XFromZero bool
}

// BarGroup is one named series of a BarChart: a value per category.
type BarGroup struct {
	Name   string
	Values []float64
}

// BarChart draws, per category, one bar per group side by side. With LogY
// the y axis is logarithmic; values that are not positive are then left out
// (and non-finite or negative values always are).
type BarChart struct {
	ID, Title  string
	YLabel     string
	Categories []string
	Groups     []BarGroup
	LogY       bool
}

// Table is a plain table of text cells.
type Table struct {
	Caption string
	Header  []string
	Rows    [][]string
}

// Block is what a Section holds: *LineChart, *BarChart, *Table, Text or Pre.
type Block interface {
	writeHTML(b *strings.Builder)
}

// Text is a paragraph of plain text (escaped).
type Text string

// palette colours series and groups in order (cycling).
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

func colour(i int) string { return palette[i%len(palette)] }

// The drawing area of every chart, in SVG user units.
const (
	chartW, chartH                       = 720, 300
	marginL, marginR, marginT, marginB   = 64, 16, 40, 44
	plotW, plotH                         = chartW - marginL - marginR, chartH - marginT - marginB
	legendRowH                           = 16
	xTickTarget, yTickTarget             = 8, 6
	emptyText                            = "no data"
	maxBarLabelChars                     = 18
	pointRadius                          = 2.5
	barGapFraction                       = 0.2
	axisColour, gridColour, markerColour = "#444", "#ddd", "#999"
)

// esc escapes s for HTML text and attribute values (SVG inline in HTML).
func esc(s string) string { return html.EscapeString(s) }

// num renders a coordinate compactly.
func num(v float64) string { return fmt.Sprintf("%.1f", v) }

// Points counts the marks the chart draws.
func (c *LineChart) Points() int {
	n := 0
	for _, s := range c.Series {
		for _, p := range s.Points {
			if finite(p.X) && finite(p.Y) {
				n++
			}
		}
	}
	return n
}

func (c *LineChart) writeHTML(b *strings.Builder) {
	n := c.Points()
	openFigure(b, c.ID, c.Title, n)
	height := chartH + legendRowH*((len(c.Series)+3)/4)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" aria-label="%s">`, chartW, height, esc(c.Title))
	if n == 0 {
		drawEmpty(b)
		b.WriteString("</svg></figure>\n")
		return
	}
	minX, maxX := math.Inf(1), math.Inf(-1)
	minY, maxY := 0.0, math.Inf(-1)
	for _, s := range c.Series {
		for _, p := range s.Points {
			if !finite(p.X) || !finite(p.Y) {
				continue
			}
			minX, maxX = math.Min(minX, p.X), math.Max(maxX, p.X)
			minY, maxY = math.Min(minY, p.Y), math.Max(maxY, p.Y)
		}
	}
	if c.XFromZero {
		minX, maxX = math.Min(minX, 0), math.Max(maxX, 0)
	}
	xt := Ticks(minX, maxX, xTickTarget)
	yt := Ticks(minY, maxY, yTickTarget)
	xs := linearScale(xt[0], xt[len(xt)-1], marginL, marginL+plotW)
	ys := linearScale(yt[0], yt[len(yt)-1], marginT+plotH, marginT)
	drawYAxis(b, yt, ys, c.YLabel)
	drawXAxis(b, xt, xs, c.XLabel)
	for i, m := range c.Markers {
		if !finite(m.X) || m.X < xt[0] || m.X > xt[len(xt)-1] {
			continue
		}
		x := xs(m.X)
		fmt.Fprintf(b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="%s" stroke-dasharray="3,3"/>`, num(x), marginT-12*(i%2), num(x), marginT+plotH, markerColour)
		// Labels alternate between two rows: markers close together
		// (short benchmarks) would otherwise print over each other.
		fmt.Fprintf(b, `<text x="%s" y="%d" font-size="10" fill="#555">%s</text>`, num(x+2), marginT-4-12*(i%2), esc(truncate(m.Label, maxBarLabelChars)))
	}
	for i, s := range c.Series {
		var pts []string
		for _, p := range s.Points {
			if finite(p.X) && finite(p.Y) {
				pts = append(pts, num(xs(p.X))+","+num(ys(p.Y)))
			}
		}
		if len(pts) > 1 {
			fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, colour(i), strings.Join(pts, " "))
		}
		for _, p := range s.Points {
			if !finite(p.X) || !finite(p.Y) {
				continue
			}
			fmt.Fprintf(b, `<circle class="datum" cx="%s" cy="%s" r="%g" fill="%s"><title>%s: %s, %s</title></circle>`,
				num(xs(p.X)), num(ys(p.Y)), pointRadius, colour(i), esc(s.Name), FormatNumber(p.X), FormatNumber(p.Y))
		}
	}
	names := make([]string, len(c.Series))
	for i, s := range c.Series {
		names[i] = s.Name
	}
	drawLegend(b, names, chartH)
	b.WriteString("</svg></figure>\n")
}

// Points counts the bars the chart draws.
func (c *BarChart) Points() int {
	n := 0
	for _, g := range c.Groups {
		for i, v := range g.Values {
			if i < len(c.Categories) && c.drawn(v) {
				n++
			}
		}
	}
	return n
}

func (c *BarChart) drawn(v float64) bool {
	if !finite(v) || v < 0 {
		return false
	}
	return !c.LogY || v > 0
}

func (c *BarChart) writeHTML(b *strings.Builder) {
	n := c.Points()
	openFigure(b, c.ID, c.Title, n)
	height := chartH + legendRowH*((len(c.Groups)+3)/4)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" aria-label="%s">`, chartW, height, esc(c.Title))
	if n == 0 {
		drawEmpty(b)
		b.WriteString("</svg></figure>\n")
		return
	}
	lo, hi := math.Inf(1), 0.0
	for _, g := range c.Groups {
		for i, v := range g.Values {
			if i < len(c.Categories) && c.drawn(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	var yt []float64
	var ys func(float64) float64
	if c.LogY {
		yt = LogTicks(lo, hi)
		ls := linearScale(math.Log10(yt[0]), math.Log10(yt[len(yt)-1]), marginT+plotH, marginT)
		ys = func(v float64) float64 { return ls(math.Log10(v)) }
	} else {
		yt = Ticks(0, hi, yTickTarget)
		ys = linearScale(yt[0], yt[len(yt)-1], marginT+plotH, marginT)
	}
	drawYAxis(b, yt, ys, c.YLabel)
	// The x axis: one slot per category, bars side by side within it.
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`, marginL, marginT+plotH, marginL+plotW, marginT+plotH, axisColour)
	slot := float64(plotW) / float64(max(len(c.Categories), 1))
	barW := slot * (1 - barGapFraction) / float64(max(len(c.Groups), 1))
	for ci, cat := range c.Categories {
		x0 := float64(marginL) + slot*float64(ci)
		fmt.Fprintf(b, `<text x="%s" y="%d" font-size="11" text-anchor="middle">%s<title>%s</title></text>`,
			num(x0+slot/2), marginT+plotH+16, esc(truncate(cat, maxBarLabelChars)), esc(cat))
		for gi, g := range c.Groups {
			if ci >= len(g.Values) || !c.drawn(g.Values[ci]) {
				continue
			}
			v := g.Values[ci]
			x := x0 + slot*barGapFraction/2 + barW*float64(gi)
			y := ys(v)
			fmt.Fprintf(b, `<rect class="datum" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s, %s: %s</title></rect>`,
				num(x), num(y), num(math.Max(barW-1, 1)), num(math.Max(float64(marginT+plotH)-y, 0.5)), colour(gi), esc(cat), esc(g.Name), FormatNumber(v))
		}
	}
	names := make([]string, len(c.Groups))
	for i, g := range c.Groups {
		names[i] = g.Name
	}
	drawLegend(b, names, chartH)
	b.WriteString("</svg></figure>\n")
}

func (t *Table) writeHTML(b *strings.Builder) {
	b.WriteString("<table>")
	if t.Caption != "" {
		fmt.Fprintf(b, "<caption>%s</caption>", esc(t.Caption))
	}
	if len(t.Header) > 0 {
		b.WriteString("<thead><tr>")
		for _, h := range t.Header {
			fmt.Fprintf(b, "<th>%s</th>", esc(h))
		}
		b.WriteString("</tr></thead>")
	}
	b.WriteString("<tbody>")
	for _, r := range t.Rows {
		b.WriteString("<tr>")
		for _, c := range r {
			fmt.Fprintf(b, "<td>%s</td>", esc(c))
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</tbody></table>\n")
}

func (t Text) writeHTML(b *strings.Builder) {
	fmt.Fprintf(b, "<p>%s</p>\n", esc(string(t)))
}

// openFigure starts a plot's figure, with its title and its point count
// (data-points: what the page's script compares with the marks drawn).
func openFigure(b *strings.Builder, id, title string, points int) {
	fmt.Fprintf(b, `<figure class="plot" data-plot="%s" data-points="%d"><figcaption>%s</figcaption>`, esc(id), points, esc(title))
}

func drawEmpty(b *strings.Builder) {
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="%s"/>`, marginL, marginT, plotW, plotH, gridColour)
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" fill="#888">%s</text>`, marginL+plotW/2, marginT+plotH/2, emptyText)
}

// linearScale maps [d0, d1] onto [r0, r1]; a zero-width domain maps to the
// middle.
func linearScale(d0, d1, r0, r1 float64) func(float64) float64 {
	if d1 == d0 || !finite(d1-d0) {
		return func(float64) float64 { return (r0 + r1) / 2 }
	}
	return func(v float64) float64 {
		// (v-d0)/(d1-d0) first: k alone can underflow for huge domains.
		return r0 + (v-d0)/(d1-d0)*(r1-r0)
	}
}

func drawYAxis(b *strings.Builder, ticks []float64, ys func(float64) float64, label string) {
	for _, t := range ticks {
		y := ys(t)
		fmt.Fprintf(b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="%s"/>`, marginL, num(y), marginL+plotW, num(y), gridColour)
		fmt.Fprintf(b, `<text class="tick" x="%d" y="%s" font-size="11" text-anchor="end">%s</text>`, marginL-6, num(y+4), FormatNumber(t))
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`, marginL, marginT, marginL, marginT+plotH, axisColour)
	if label != "" {
		fmt.Fprintf(b, `<text x="14" y="%d" font-size="11" transform="rotate(-90 14 %d)" text-anchor="middle">%s</text>`,
			marginT+plotH/2, marginT+plotH/2, esc(label))
	}
}

func drawXAxis(b *strings.Builder, ticks []float64, xs func(float64) float64, label string) {
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`, marginL, marginT+plotH, marginL+plotW, marginT+plotH, axisColour)
	for _, t := range ticks {
		x := xs(t)
		fmt.Fprintf(b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="%s"/>`, num(x), marginT+plotH, num(x), marginT+plotH+4, axisColour)
		fmt.Fprintf(b, `<text class="tick" x="%s" y="%d" font-size="11" text-anchor="middle">%s</text>`, num(x), marginT+plotH+16, FormatNumber(t))
	}
	if label != "" {
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="11" text-anchor="middle">%s</text>`, marginL+plotW/2, marginT+plotH+34, esc(label))
	}
}

// drawLegend draws names, four to a row, below the chart.
func drawLegend(b *strings.Builder, names []string, top int) {
	colW := plotW / 4
	for i, n := range names {
		x := marginL + colW*(i%4)
		y := top + legendRowH*(i/4)
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/>`, x, y-9, colour(i))
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="11">%s<title>%s</title></text>`, x+14, y, esc(truncate(n, 28)), esc(n))
	}
}

// truncate shortens s to at most n runes, marking the cut with "…".
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Pre is preformatted text (escaped) under a caption: an engine's own
// account of its LSM, say.
type Pre struct {
	Caption, Text string
}

func (p Pre) writeHTML(b *strings.Builder) {
	fmt.Fprintf(b, "<figure class=\"text\"><figcaption>%s</figcaption><pre>%s</pre></figure>\n", esc(p.Caption), esc(p.Text))
}
