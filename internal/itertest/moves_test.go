package itertest

import (
	"strings"
	"testing"
)

func TestMove(t *testing.T) {
	es, err := ParseEntries("a.SET.1:1 b.SET.1:2 c.SET.1:3")
	if err != nil {
		t.Fatal(err)
	}
	it := &SliceIter{Entries: es}
	for _, c := range []struct {
		line string
		want string // the user key positioned at, "." when none
	}{
		{"first", "a"}, {"next", "b"}, {"last", "c"}, {"prev", "b"},
		{"seek-ge bb", "c"}, {"seek-lt bb", "b"}, {"seek-lt a", "."},
	} {
		ok, known, err := Move(it, strings.Fields(c.line))
		got := "."
		if ok {
			got = string(it.Key().UserKey)
		}
		if !known || err != nil || got != c.want {
			t.Errorf("%s: at %s (known %v, err %v), want %s", c.line, got, known, err, c.want)
		}
	}
	if _, known, _ := Move(it, []string{"seek-for-prev", "a"}); known {
		t.Error("seek-for-prev: known, want left to the caller")
	}
	if _, _, err := Move(it, []string{"seek-ge"}); err == nil {
		t.Error("seek-ge without a key: no error")
	}
}
