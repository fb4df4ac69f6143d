package rangedel_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/itertest"
	"github.com/shaledb/shale/internal/rangedel"
)

// TestFragment runs testdata/fragment, in the scripts' notation (see
// itertest): "fragment" cuts the tombstones of its input and prints the
// spans; "coalesce [snapshots=(...)]" coalesces the one span of its input;
// "check-fragmented" prints what CheckFragmented says of its spans.
func TestFragment(t *testing.T) {
	datadriven.RunTest(t, "testdata/fragment", func(t *testing.T, td *datadriven.TestData) string {
		switch td.Cmd {
		case "fragment":
			ts, err := itertest.ParseTombstones(td.Input)
			if err != nil {
				td.Fatalf(t, "%v", err)
			}
			spans := rangedel.Fragment(bytes.Compare, ts)
			if err := rangedel.CheckFragmented(bytes.Compare, spans); err != nil {
				td.Fatalf(t, "Fragment's output: %v", err)
			}
			return formatSpanLines(spans)
		case "coalesce":
			spans := parseSpans(t, td)
			if len(spans) != 1 {
				td.Fatalf(t, "coalesce takes one span")
			}
			var snaps []base.SeqNum
			if arg, ok := td.Arg("snapshots"); ok {
				for i := range arg.Vals {
					var s uint64
					arg.Scan(t, i, &s)
					snaps = append(snaps, base.SeqNum(s))
				}
			}
			in := spans[0]
			seqs := slices.Clone(in.Seqs)
			out := rangedel.Coalesce(in, snaps)
			if !slices.Equal(in.Seqs, seqs) {
				td.Fatalf(t, "Coalesce modified its input: %v, was %v", in.Seqs, seqs)
			}
			return formatSpanLines([]rangedel.Span{out})
		case "check-fragmented":
			if err := rangedel.CheckFragmented(bytes.Compare, parseSpans(t, td)); err != nil {
				return err.Error() + "\n"
			}
			return "ok\n"
		}
		td.Fatalf(t, "unknown command %q", td.Cmd)
		return ""
	})
}

func parseSpans(t *testing.T, td *datadriven.TestData) []rangedel.Span {
	var spans []rangedel.Span
	for _, f := range strings.Fields(td.Input) {
		sp, err := itertest.ParseSpan(f)
		if err != nil {
			td.Fatalf(t, "%v", err)
		}
		spans = append(spans, sp)
	}
	return spans
}

// formatSpanLines prints one span a line, or "(none)".
func formatSpanLines(spans []rangedel.Span) string {
	if len(spans) == 0 {
		return "(none)\n"
	}
	var b strings.Builder
	for _, sp := range spans {
		b.WriteString(itertest.FormatSpan(sp) + "\n")
	}
	return b.String()
}
