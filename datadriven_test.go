package shale

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/shaledb/shale/vfs"
)

// TestDataDriven runs the scripts in testdata/db: writes, flushes,
// compactions and snapshots with automatic compactions off (so the shape is
// deterministic), printing reads and the LSM shape. Regenerate the expected
// output with `go test -run TestDataDriven -rewrite` and review the diff.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata/db", func(t *testing.T, path string) {
		var db *DB
		snaps := map[string]*Snapshot{}
		defer func() {
			if db != nil {
				db.Close()
			}
		}()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if db == nil && d.Cmd != "open" {
				d.Fatalf(t, "open first")
			}
			lines := strings.Split(strings.TrimSpace(d.Input), "\n")
			switch d.Cmd {
			case "open":
				o := testOptions(vfs.NewMem())
				o.DisableAutoCompactions = true
				o.NumLevels = 4
				db2, err := Open("/db", o)
				if err != nil {
					return err.Error()
				}
				db = db2
				return ""
			case "batch":
				// One op per line: set k v | del k | singledel k | delrange a b
				b := db.NewBatch()
				for _, l := range lines {
					f := strings.Fields(l)
					switch {
					case f[0] == "set" && len(f) == 3:
						b.Put([]byte(f[1]), []byte(f[2]))
					case f[0] == "del" && len(f) == 2:
						b.Delete([]byte(f[1]))
					case f[0] == "singledel" && len(f) == 2:
						b.SingleDelete([]byte(f[1]))
					case f[0] == "delrange" && len(f) == 3:
						b.DeleteRange([]byte(f[1]), []byte(f[2]))
					default:
						d.Fatalf(t, "bad batch line %q", l)
					}
				}
				if err := db.Write(b, nil); err != nil {
					return err.Error()
				}
				return ""
			case "flush":
				if err := db.Flush(); err != nil {
					return err.Error()
				}
				return db.versionString()
			case "compact":
				var start, end []byte
				if len(d.CmdArgs) == 2 {
					start, end = []byte(d.CmdArgs[0].Key), []byte(d.CmdArgs[1].Key)
				}
				if err := db.CompactRange(start, end); err != nil {
					return err.Error()
				}
				return db.versionString()
			case "snapshot":
				snaps[d.CmdArgs[0].Key] = db.NewSnapshot()
				return ""
			case "release":
				snaps[d.CmdArgs[0].Key].Release()
				delete(snaps, d.CmdArgs[0].Key)
				return ""
			case "get", "scan", "scan-reverse":
				ro := &ReadOptions{}
				for _, a := range d.CmdArgs {
					if a.Key == "snapshot" {
						ro.Snapshot = snaps[a.Vals[0]]
					}
				}
				var out strings.Builder
				if d.Cmd == "get" {
					for _, k := range lines {
						v, err := db.Get([]byte(k), ro)
						switch {
						case errors.Is(err, ErrNotFound):
							fmt.Fprintf(&out, "%s: not found\n", k)
						case err != nil:
							fmt.Fprintf(&out, "%s: %v\n", k, err)
						default:
							fmt.Fprintf(&out, "%s: %s\n", k, v)
						}
					}
					return out.String()
				}
				it := db.NewIterator(ro)
				defer it.Close()
				ok := it.First()
				next := it.Next
				if d.Cmd == "scan-reverse" {
					ok, next = it.Last(), it.Prev
				}
				for ; ok; ok = next() {
					fmt.Fprintf(&out, "%s: %s\n", it.Key(), it.Value())
				}
				if err := it.Err(); err != nil {
					fmt.Fprintf(&out, "error: %v\n", err)
				}
				if out.Len() == 0 {
					return "(empty)\n"
				}
				return out.String()
			case "tombstones":
				m := db.Metrics()
				return fmt.Sprintf("tombstones in tables: %d\n", m.Tombstones)
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	})
}
