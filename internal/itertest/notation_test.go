package itertest

import (
	"testing"

	"github.com/shaledb/shale/internal/base"
)

func TestNotationRoundTrip(t *testing.T) {
	for _, s := range []string{"a.SET.5", "bc.DEL.0", "a.SINGLEDEL.7", "a.MERGE.3", "a.BLOBINDEX.1", "a.RANGEDEL.2", "b.KIND(66).3"} {
		k, err := ParseInternalKey(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if got := FormatKey(k); got != s {
			t.Errorf("FormatKey(ParseInternalKey(%q)) = %q", s, got)
		}
	}
	e, err := ParseEntry("a.SET.5:v1")
	if err != nil || string(e.Key.UserKey) != "a" || e.Key.SeqNum() != 5 || e.Key.Kind() != base.KindSet || string(e.Value) != "v1" {
		t.Fatalf("ParseEntry: %+v, %v", e, err)
	}
	if e, err := ParseEntry("a.DEL.4"); err != nil || e.Value != nil {
		t.Fatalf("ParseEntry without a value: %+v, %v", e, err)
	}
	for _, s := range []string{"[a,c)#7", "[a,c)#9,7", "[b,b)#3,3"} {
		sp, err := ParseSpan(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if got := FormatSpan(sp); got != s {
			t.Errorf("FormatSpan(ParseSpan(%q)) = %q", s, got)
		}
	}
	tb, err := ParseTombstone("[a,c)#7")
	if err != nil || string(tb.Start) != "a" || string(tb.End) != "c" || tb.Seq != 7 {
		t.Fatalf("ParseTombstone: %+v, %v", tb, err)
	}
}

func TestNotationErrors(t *testing.T) {
	for _, s := range []string{"a", "a.SET", "a.PUT.5", "a.SET.x", "a.SET.-1", ".SET", "a.KIND(300).1"} {
		if _, err := ParseInternalKey(s); err == nil {
			t.Errorf("ParseInternalKey(%q) accepted", s)
		}
	}
	for _, s := range []string{"a,c)#7", "[a,c#7", "[ac)#7", "[a,c)", "[a,c)#", "[a,c)#7,6", "[a,c)7"} {
		if _, err := ParseTombstone(s); err == nil {
			t.Errorf("ParseTombstone(%q) accepted", s)
		}
	}
}
