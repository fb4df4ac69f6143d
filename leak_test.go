package shale

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/vfs"
)

// recordingHandler keeps the messages logged at error level.
type recordingHandler struct {
	mu   sync.Mutex
	msgs []string
}

func (h *recordingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Message)
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

func (h *recordingHandler) saw(s string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.msgs {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// TestLeakedIteratorReported checks, in invariants and race builds, that an
// iterator dropped without Close is reported in the log.
func TestLeakedIteratorReported(t *testing.T) {
	if !invariants.Enabled {
		t.Skip("leak reports are on in invariants and race builds")
	}
	h := &recordingHandler{}
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
