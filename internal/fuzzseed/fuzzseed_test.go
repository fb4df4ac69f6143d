package fuzzseed

import "testing"

func TestEncode(t *testing.T) {
	got, err := Encode([]byte("a\x00\"b"), "s", byte(7), uint16(9), uint32(10), uint64(11), 12, int64(-13), true)
	if err != nil {
		t.Fatal(err)
	}
	want := "go test fuzz v1\n[]byte(\"a\\x00\\\"b\")\nstring(\"s\")\nbyte('\\x07')\nuint16(9)\nuint32(10)\nuint64(11)\nint(12)\nint64(-13)\nbool(true)\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := Encode(1.5); err == nil {
		t.Fatal("a float64 argument was accepted")
	}
}
