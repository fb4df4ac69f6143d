package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/monotime"
)

// deletescan is the scan of issue 12's seed: write --num keys in order
// (one prefix: the keys are zero-padded numbers), delete the lowest 90%,
// and time reading the first deleteScanLive live keys from the start, right
// after the deletes and again after --delete_wait of idle time, with
// internal_delete_skipped_count, the tombstones the scan stepped over; after
// each scan it times point lookups of deleted keys. The scenario runs on a
// fresh database per variant: the run's options, the same with the seed's
// deletion-triggered compaction collector, the run's options with a full
// manual compaction after the deletes, and the run's options with shale's
// delete handling off (delete-aware compaction and the memtable's scan
// flush trigger: what shale did before them).

// deleteScanValueSize is deletescan's --value_size unless the flag is given:
// the seed's 500 bytes.
const deleteScanValueSize = 500

// deleteScanLive is how many live keys each timed scan reads.
const deleteScanLive = 500

// deleteScanVariant is one way to run the scenario.
type deleteScanVariant struct {
	name string
	// options changes the run's options.
	options func(o *shale.Options)
	// compact runs a full CompactRange after the deletes, before the
	// first scan.
	compact bool
}

var deleteScanVariants = []deleteScanVariant{
	{name: "default", options: func(*shale.Options) {}},
	{name: "collector", options: deletionCollectorOptions},
	{name: "compacted", options: func(*shale.Options) {}, compact: true},
	{name: "aware-off", options: func(o *shale.Options) {
		o.DisableDeleteAwareCompaction = true
		o.MemtableOpScanFlushTrigger = -1
	}},
}

// deleteScanGets is how many deleted keys each timing of point lookups
// reads.
const deleteScanGets = 10000

// The seed's collector: NewCompactOnDeletionCollectorFactory(1000000, 1000),
// a table marked once 1,000 of 1,000,000 consecutive entries are deletions.
const (
	deleteScanWindow  = 1000000
	deleteScanTrigger = 1000
)

// deletionCollectorOptions adds the seed's deletion-triggered compaction
// collector to the run's collectors.
func deletionCollectorOptions(o *shale.Options) {
	o.TablePropertiesCollectorFactories = append(o.TablePropertiesCollectorFactories,
		shale.NewCompactOnDeletionCollectorFactory(deleteScanWindow, deleteScanTrigger, 0))
}

// benchDeleteScan runs the scenario once per variant of deleteScanVariants
// and prints its lines.
func benchDeleteScan(r *benchRunner, t *benchThread) error {
	c := &r.cfg
	live := c.num / 10
	deleted := c.num - live
	fmt.Fprintf(r.out, "deletescan   : %d keys of %d-byte values written in order, the lowest %d deleted, first %d live keys read from the start; idle wait %v\n",
		c.num, c.valueSize, deleted, min(deleteScanLive, live), c.deleteWait)
	for _, v := range deleteScanVariants {
		o, err := r.options()
		if err != nil {
			return err
		}
		v.options(o)
		if err := r.recreateWith(o); err != nil {
			return err
		}
		r.done.Store(0) // the progress lines count this variant's writes
		if err := r.deleteScanRun(t, v, deleted); err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
	}
	t.finished(1, 0)
	return nil
}

// deleteScanRun writes, deletes and scans on the current (fresh) database.
func (r *benchRunner) deleteScanRun(t *benchThread, v deleteScanVariant, deleted int64) error {
	c := &r.cfg
	start := monotime.Now()
	if err := r.write(t, false, t.makeKey); err != nil {
		return err
	}
	wrote := monotime.Since(start)
	start = monotime.Now()
	if err := r.deleteRange(t, deleted); err != nil {
		return err
	}
	fmt.Fprintf(r.out, "deletescan   : %-9s : wrote in %.3f s, deleted in %.3f s\n", v.name, wrote.Seconds(), monotime.Since(start).Seconds())
	when := "right after the deletes"
	if v.compact {
		start = monotime.Now()
		if err := r.db.CompactRange(nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(r.out, "deletescan   : %-9s : CompactRange of everything in %.3f s\n", v.name, monotime.Since(start).Seconds())
		when = "right after the compaction"
	}
	fmt.Fprintf(r.out, "deletescan   : %-9s : tables %s: %s\n", v.name, when, deleteScanShape(r.db.Metrics()))
	if err := r.deleteScanTimed(t, v.name, when, deleted); err != nil {
		return err
	}
	time.Sleep(c.deleteWait)
	m := r.db.Metrics()
	fmt.Fprintf(r.out, "deletescan   : %-9s : tables after %v idle: %s\n", v.name, c.deleteWait, deleteScanShape(m))
	fmt.Fprintf(r.out, "deletescan   : %-9s : write amplification after %v idle: %.2f\n", v.name, c.deleteWait, m.WriteAmp)
	return r.deleteScanTimed(t, v.name, fmt.Sprintf("after %v idle", c.deleteWait), deleted)
}

// deleteRange deletes keys 0 .. n-1 in order, --batch_size per write.
func (r *benchRunner) deleteRange(t *benchThread, n int64) error {
	bs := int64(r.cfg.batchSize)
	if bs > 1 && t.batch == nil {
		t.batch = r.db.NewBatch()
	}
	for i := int64(0); i < n; {
		if bs == 1 {
			if err := r.db.Delete(t.makeKey(i), r.wo); err != nil {
				return err
			}
			i++
			continue
		}
		t.batch.Reset()
		for j := int64(0); j < bs && i < n; j++ {
			t.batch.Delete(t.makeKey(i))
			i++
		}
		if err := r.db.Write(t.batch, r.wo); err != nil {
			return err
		}
	}
	return nil
}

// deleteScanShape renders the non-empty levels with their files, bytes and
// point tombstones, e.g. "L0 2 files 1.2 MiB 9000 deletions, L6 ...".
func deleteScanShape(m *shale.Metrics) string {
	var parts []string
	for l, lm := range m.Levels {
		if lm.NumFiles == 0 {
			continue
		}
		s := "s"
		if lm.NumFiles == 1 {
			s = ""
		}
		parts = append(parts, fmt.Sprintf("L%d %d file%s %.1f MiB %d deletions", l, lm.NumFiles, s, float64(lm.Size)/(1<<20), lm.NumDeletions))
	}
	if len(parts) == 0 {
		return "none (everything is in memtables)"
	}
	return strings.Join(parts, ", ")
}

// deleteScanTimed reads the first deleteScanLive keys from the start with a
// new iterator and prints how long that took, from creating the iterator
// to the last key, and what its PerfContext counted. As the seed's loop,
// it moves once more after the last key it reads.
func (r *benchRunner) deleteScanTimed(t *benchThread, variant, when string, deleted int64) error {
	ro := *r.ro
	var pc shale.PerfContext
	ro.PerfContext = &pc
	start := monotime.Now()
	it := r.db.NewIterator(&ro)
	n := 0
	for ok := it.First(); ok && n < deleteScanLive; ok = it.Next() {
		n++
	}
	elapsed := monotime.Since(start)
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return err
	}
	fmt.Fprintf(r.out, "deletescan   : %-9s : first %d live keys %s: %.3f ms, internal_delete_skipped_count %d, internal_key_skipped_count %d\n",
		variant, n, when, float64(elapsed.Nanoseconds())/1e6, pc.InternalDeleteSkippedCount, pc.InternalKeySkippedCount)
	return r.deleteScanGets(t, variant, when, deleted)
}

// deleteScanGets looks up deleteScanGets keys drawn from the deleted ones
// (the same keys every time) and prints the time per lookup. A deleted key
// found is an error.
func (r *benchRunner) deleteScanGets(t *benchThread, variant, when string, deleted int64) error {
	if deleted == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(uint64(r.cfg.seed), 3))
	start := monotime.Now()
	for range deleteScanGets {
		key := t.makeKey(rng.Int64N(deleted))
		v, err := r.db.Get(key, r.ro)
		if err == nil {
			return fmt.Errorf("deleted key %q found (%d bytes)", key, len(v))
		} else if !errors.Is(err, shale.ErrNotFound) {
			return err
		}
	}
	elapsed := monotime.Since(start)
	fmt.Fprintf(r.out, "deletescan   : %-9s : %d gets of deleted keys %s: %.3f us/op\n",
		variant, deleteScanGets, when, float64(elapsed.Nanoseconds())/1e3/deleteScanGets)
	return nil
}
