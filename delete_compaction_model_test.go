package shale

import (
	"fmt"
	"testing"

	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
)

// markAllFactory makes collectors that ask for every table to be
// compacted: compactions for tombstones run all the time, and every table
// goes down to the last level, where only those holding tombstones are
// rewritten. Picking must still come to rest (WaitForCompact returns).
type markAllFactory struct{}

func (markAllFactory) Name() string { return "test.marks-every-table" }

func (markAllFactory) CreateTablePropertiesCollector(TablePropertiesCollectorContext) TablePropertiesCollector {
	return markAll{}
}

type markAll struct{}

func (markAll) AddUserKey(_, _ []byte, _ EntryType, _, _ uint64) error { return nil }
func (markAll) Finish(p UserCollectedProperties) error {
	p["test.marked"] = "yes"
	return nil
}
func (markAll) Name() string      { return "test.marks-every-table" }
func (markAll) NeedCompact() bool { return true }

// deleteAwareVariants are the option sets of delete-aware compaction the
// model, crash and power-loss tests run under (the metamorphic test has
// the same in metamorphicSets).
var deleteAwareVariants = []struct {
	name string
	set  func(*Options)
}{
	{"deletion-collector", func(o *Options) {
		o.TablePropertiesCollectorFactories = []TablePropertiesCollectorFactory{NewCompactOnDeletionCollectorFactory(32, 8, 0.4)}
	}},
	{"marks-every-table", func(o *Options) {
		o.TablePropertiesCollectorFactories = []TablePropertiesCollectorFactory{markAllFactory{}}
	}},
	{"tombstone-dense-aggressive", func(o *Options) {
		o.NumDeletionsThreshold = 3
		o.DeletionSizeRatioThreshold = 0.1
		o.TombstoneDenseCompactionThreshold = 0.01
	}},
	{"delete-aware-off", func(o *Options) { o.DisableDeleteAwareCompaction = true }},
}

// TestModelDeleteAware is TestModel under each option set of delete-aware
// compaction: collectors marking tables, aggressive tombstone-density
// compactions, and the built-in policy off.
func TestModelDeleteAware(t *testing.T) {
	ops := bySize(3000, 1000, 20000)
	for _, v := range deleteAwareVariants {
		t.Run(v.name, func(t *testing.T) {
			forEachSeed(t, bySize(2, 1, 10), func(t *testing.T, seed uint64) {
				runModel(t, seed, ops, v.set)
			})
		})
	}
}

// checkMarks reopens a crash image (automatic compactions off, so nothing
// changes it) and checks Check's verdict, which compares every table's
// recorded counts with its properties, and that every live table is
// marked for compaction exactly when f's collector, run again over the
// table's entries, asks for it: marks survive the crash, none is lost or
// invented.
// It returns how many tables were marked.
func checkMarks(t *testing.T, ci int, fs *vfs.MemFS, base *Options, f TablePropertiesCollectorFactory) (marked int) {
	t.Helper()
	img := fs.CrashClone() // checkCrashState reopens fs itself afterwards
	if rep, err := Check("/db", &Options{FS: img, NumLevels: base.NumLevels}); err != nil || !rep.OK() {
		t.Fatalf("crash %d: Check: %v\n%s", ci, err, rep)
	}
	o := *base
	o.FS = img
	o.DisableAutoCompactions = true
	db, err := Open("/db", &o)
	if err != nil {
		t.Fatalf("crash %d: reopen: %v", ci, err)
	}
	defer db.Close()
	v := db.versions.Current()
	defer v.Unref()
	for level, files := range v.Levels {
		for _, m := range files {
			tab, err := db.fileCache.findTable(m.FileNum)
			if err != nil {
				t.Fatal(err)
			}
			c := f.CreateTablePropertiesCollector(TablePropertiesCollectorContext{Level: level})
			it := tab.reader.NewIter(sstable.IterOptions{})
			for ok := it.First(); ok; ok = it.Next() {
				k := it.Key()
				c.AddUserKey(k.UserKey, it.Value(), entryTypeOf(k.Kind()), uint64(k.SeqNum()), 0)
			}
			err = it.Close()
			for _, sp := range tab.reader.RangeTombstones() {
				for _, seq := range sp.Seqs {
					c.AddUserKey(sp.Start, sp.End, EntryRangeDeletion, uint64(seq), 0)
				}
			}
			tab.release()
			if err != nil {
				t.Fatal(err)
			}
			c.Finish(UserCollectedProperties{})
			if c.NeedCompact() != m.MarkedForCompaction {
				t.Fatalf("crash %d: L%d table %s: marked %v after the crash, its collector says %v", ci, level, m.FileNum, m.MarkedForCompaction, c.NeedCompact())
			}
			if m.MarkedForCompaction {
				marked++
			}
		}
	}
	return marked
}

// TestCrashRecoveryDeleteAware is TestCrashRecovery with tables marked by
// RocksDB's deletion collector, and with aggressive tombstone-density
// compactions: every crash clone recovers a prefix of the writes, its
// tables' recorded counts agree with their properties, and their marks
// with what the collector computes.
func TestCrashRecoveryDeleteAware(t *testing.T) {
	collector := NewCompactOnDeletionCollectorFactory(24, 6, 0.5)
	for _, v := range []struct {
		name string
		set  func(*Options)
	}{
		{"deletion-collector", func(o *Options) {
			o.TablePropertiesCollectorFactories = []TablePropertiesCollectorFactory{collector}
		}},
		{"deletion-collector-dense-aggressive", func(o *Options) {
			o.TablePropertiesCollectorFactories = []TablePropertiesCollectorFactory{collector}
			deleteAwareVariants[2].set(o)
		}},
	} {
		t.Run(v.name, func(t *testing.T) {
			forEachSeed(t, bySize(3, 1, 30), func(t *testing.T, seed uint64) {
				marked := 0
				runCrashWith(t, seed, v.set, func(t *testing.T, ci int, fs *vfs.MemFS, opts *Options) {
					marked += checkMarks(t, ci, fs, opts, collector)
				})
				// Compactions take marked tables soon, but some crash
				// images must catch one, or the check checks nothing.
				if marked == 0 {
					t.Fatal("no crash image held a marked table")
				}
				t.Logf("%d marked tables in the crash images", marked)
			})
		})
	}
}

// TestPowerLossDeleteAware is TestPowerLoss (a crash after any mutation)
// with compactions for tombstones in flight: a deletion collector and
// aggressive tombstone-density compactions.
func TestPowerLossDeleteAware(t *testing.T) {
	forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
		runPowerLoss(t, seed, bySize(2000, 1000, 20000), 0.5, func(o *Options) {
			o.TablePropertiesCollectorFactories = []TablePropertiesCollectorFactory{NewCompactOnDeletionCollectorFactory(24, 6, 0.5)}
			deleteAwareVariants[2].set(o)
		})
	})
}

// TestDeleteAwareCompactionsRun makes sure the variants above do what they
// are there for: with them, compactions for tombstones run (the LOG names
// their reasons), so the model and crash tests exercise them.
func TestDeleteAwareCompactionsRun(t *testing.T) {
	for _, v := range deleteAwareVariants[:3] {
		t.Run(v.name, func(t *testing.T) {
			fs := vfs.NewMem()
			opts := testOptions(fs)
			v.set(opts)
			db, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for round := range 6 {
				for i := range 300 {
					db.Put([]byte(fmt.Sprintf("k%04d", i)), []byte(fmt.Sprintf("value-%d-%d", round, i)), nil)
				}
				for i := range 200 {
					db.Delete([]byte(fmt.Sprintf("k%04d", (i+round*50)%300)), nil)
				}
			}
			if err := db.WaitForCompact(&WaitForCompactOptions{Flush: true}); err != nil {
				t.Fatal(err)
			}
			log := string(readFile(t, fs, "/db/LOG"))
			n := 0
			for _, r := range []string{"reason=marked", "reason=tombstone-density", "reason=elision-only"} {
				n += countSubstr(log, r)
			}
			if n == 0 {
				t.Fatalf("no compaction for tombstones ran:\n%s", db.Metrics())
			}
		})
	}
}

func countSubstr(s, sub string) (n int) {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			n++
		}
	}
	return n
}
