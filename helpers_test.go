package shale

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

func readFile(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return buf
}

func writeFile(t *testing.T, fs vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func findFile(t *testing.T, fs vfs.FS, dir string, typ base.FileType) string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if ft, _, ok := base.ParseFilename(n); ok && ft == typ {
			return n
		}
	}
	t.Fatalf("no file of type %d in %v", typ, names)
	return ""
}

// listNames lists dir in fs, sorted; nil when dir is missing.
func listNames(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// countFiles counts the files of type t in /db.
func countFiles(t *testing.T, fs vfs.FS, typ base.FileType) int {
	t.Helper()
	n := 0
	for _, name := range listNames(t, fs, "/db") {
		if ft, _, ok := base.ParseFilename(name); ok && ft == typ {
			n++
		}
	}
	return n
}

// recordingHandler keeps the messages logged at level or above.
type recordingHandler struct {
	level slog.Level
	mu    sync.Mutex
	msgs  []string
}

func (h *recordingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
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

// openFaultDB opens /db on an errorfs.FS over mem (seed 1) with test options, no
// logging, and set applied to them (set may be nil).
func openFaultDB(t *testing.T, mem *vfs.MemFS, set func(*Options)) (*errorfs.FS, *Options, *DB) {
	t.Helper()
	ffs := errorfs.New(mem, 1)
	opts := testOptions(ffs)
	opts.Logger = discardLogger()
	if set != nil {
		set(opts)
	}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	return ffs, opts, db
}

// dumpKey lists every stored version of key, by source (for debugging tests).
func (d *DB) dumpKey(key string) string {
	var b strings.Builder
	rs := d.loadReadState()
	defer rs.unref()
	mems := append([]*memTable{rs.mem}, rs.imms...)
	for i, m := range mems {
		it := m.NewIter()
		for ok := it.SeekGE([]byte(key)); ok && string(it.Key().UserKey) == key; ok = it.Next() {
			fmt.Fprintf(&b, " mem%d:%s", i, it.Key())
		}
		it.Close()
	}
	for level, files := range rs.version.Levels {
		for _, f := range files {
			t, err := d.fileCache.findTable(f.FileNum)
			if err != nil {
				fmt.Fprintf(&b, " L%d/%s: %v", level, f.FileNum, err)
				continue
			}
			it := t.reader.NewIter(sstable.IterOptions{})
			for ok := it.SeekGE([]byte(key)); ok && string(it.Key().UserKey) == key; ok = it.Next() {
				fmt.Fprintf(&b, " L%d/%s:%s", level, f.FileNum, it.Key())
			}
			it.Close()
			t.release()
		}
	}
	return b.String()
}
