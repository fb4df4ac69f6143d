package shale

import (
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/vfs"
)

// TestLeakedIteratorReported checks, in invariants and race builds, that an
// iterator dropped without Close is reported in the log.
func TestLeakedIteratorReported(t *testing.T) {
	if !invariants.Enabled {
		t.Skip("leak reports are on in invariants and race builds")
	}
	h := &recordingHandler{level: slog.LevelError}
	o := testOptions(vfs.NewMem())
	o.Logger = slog.New(h)
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	func() {
		it := db.NewIterator(nil)
		it.First()
	}()
	closed := db.NewIterator(nil)
	closed.Close()
	for i := 0; i < 1000 && !h.saw("iterator leaked"); i++ {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if !h.saw("iterator leaked") {
		t.Fatal("a leaked iterator was not reported")
	}
}
