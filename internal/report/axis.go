package report

import (
	"math"
	"strconv"
	"strings"
)

// maxTicks bounds the ticks of one axis, whatever the range: a tick loop
// over a range that float64 cannot step through would otherwise not end.
const maxTicks = 20

// Ticks returns about n "nice" tick values (1, 2 or 5 times a power of
// ten) covering [lo, hi], the first at or below lo and the last at or above
// hi. A range of one value is widened around it; non-finite bounds give
// [0, 1]. It never returns more than maxTicks values, nor fewer than two.
func Ticks(lo, hi float64, n int) []float64 {
	if !finite(lo) || !finite(hi) {
		lo, hi = 0, 1
	}
	if lo > hi {
		lo, hi = hi, lo
	}
	if lo == hi {
		d := math.Abs(lo) / 2
		if d == 0 {
			d = 1
		}
		v := lo
		lo, hi = lo-d, hi+d
		if v >= 0 && lo < 0 {
			lo = 0 // keep an axis of non-negative values at zero
		}
	}
	n = max(n, 2)
	step := niceStep((hi - lo) / float64(n-1))
	first := math.Floor(lo/step) * step
	last := math.Ceil(hi/step) * step
	if !finite(step) || step <= 0 || !finite(first) || !finite(last) ||
		(last-first)/step > maxTicks-1 || first+step == first {
		// The range is beyond float64's steps (or overflows): its ends.
		return []float64{lo, hi}
	}
	var ticks []float64
	for i := 0; i < maxTicks; i++ {
		v := first + float64(i)*step
		// Snap values like 0.30000000000000004 to the step's grid.
		if d := -math.Floor(math.Log10(step)); d > 0 && d < 300 {
			p := math.Pow(10, d)
			if r := math.Round(v*p) / p; finite(r) {
				v = r
			}
		}
		ticks = append(ticks, v)
		if v >= last-step/2 {
			break
		}
	}
	if len(ticks) < 2 {
		ticks = append(ticks, ticks[0]+step)
	}
	return ticks
}

// niceStep returns the smallest of 1, 2, 5 or 10 times a power of ten that
// is at least raw.
func niceStep(raw float64) float64 {
	if !(raw > 0) || !finite(raw) {
		return 1
	}
	exp := math.Floor(math.Log10(raw))
	pow := math.Pow(10, exp)
	frac := raw / pow
	switch {
	case frac <= 1:
		return pow
	case frac <= 2:
		return 2 * pow
	case frac <= 5:
		return 5 * pow
	default:
		return 10 * pow
	}
}

// LogTicks returns the powers of ten covering [lo, hi] on a logarithmic
// axis, lo > 0; at most maxTicks of them (every k-th power when the range is
// wider).
func LogTicks(lo, hi float64) []float64 {
	if !(lo > 0) || !finite(lo) {
		lo = 1
	}
	if !(hi >= lo) || !finite(hi) {
		hi = lo
	}
	a := math.Floor(math.Log10(lo))
	b := math.Ceil(math.Log10(hi))
	if b <= a {
		b = a + 1
	}
	every := math.Ceil((b - a) / (maxTicks - 1))
	var ticks []float64
	for e := a; e < b+every; e += every {
		ticks = append(ticks, math.Pow(10, e))
		if e >= b {
			break
		}
	}
	return ticks
}

// FormatNumber renders v for an axis label or a table: at most three
// significant digits with an SI suffix (k, M, G, T, P, E) from a thousand
// on, plain below ("0.25", "12", "1.5k", "3.2G", "1e+21").
func FormatNumber(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case v == 0:
		return "0"
	}
	a := math.Abs(v)
	suffixes := []string{"", "k", "M", "G", "T", "P", "E"}
	i := 0
	for a >= 999.5 && i < len(suffixes)-1 {
		a /= 1000
		v /= 1000
		i++
	}
	if a >= 999.5 { // beyond E: scientific
		return strconv.FormatFloat(v*1e18, 'g', 3, 64)
	}
	s := strconv.FormatFloat(v, 'g', 3, 64)
	if strings.ContainsAny(s, "e") { // tiny values
		return s
	}
	return s + suffixes[i]
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
