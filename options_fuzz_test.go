package shale

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
)

// FuzzParseOptionsFile parses arbitrary OPTIONS files: an error matching
// base.ErrInvalidArgument that starts with "shale: ", or options that,
// with defaults filled in, are written and parsed back to the same fields.
func FuzzParseOptionsFile(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := ParseOptionsFile(data)
		if err != nil {
			if o != nil || !errors.Is(err, base.ErrInvalidArgument) || !strings.HasPrefix(err.Error(), "shale: ") {
				t.Fatalf("ParseOptionsFile: %v (options %v)", err, o != nil)
			}
			return
		}
		o.EnsureDefaults()
		enc := o.encodeOptionsFile()
		o2, err := ParseOptionsFile(enc)
		if err != nil {
			t.Fatalf("parsing what encodeOptionsFile wrote: %v\n%s", err, enc)
		}
		o2.EnsureDefaults()
		if a, b := fmt.Sprint(o.optionsFileFields()), fmt.Sprint(o2.optionsFileFields()); a != b {
			t.Fatalf("round trip changed options:\n%s\n%s", a, b)
		}
	})
}

// TestParseOptionsFileLongLine: a line longer than the scanner's buffer
// is an invalid-argument error like any other malformed line, not a bare
// bufio error returned alongside half-parsed options.
func TestParseOptionsFileLongLine(t *testing.T) {
	data := "[CFOptions \"default\"]\n  block_size=4096\n  x=" + strings.Repeat("y", 70<<10) + "\n"
	o, err := ParseOptionsFile([]byte(data))
	if o != nil || !errors.Is(err, base.ErrInvalidArgument) || !strings.HasPrefix(err.Error(), "shale: ") {
		t.Fatalf("ParseOptionsFile of a 70 KiB line: %v, options returned: %v", err, o != nil)
	}
}
