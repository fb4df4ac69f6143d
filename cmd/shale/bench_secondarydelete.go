package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/monotime"
)

// secondarydelete is issue 12 item 5's benchmark: a time series of --num
// entries (the key is an id, the value starts with an 8-byte big-endian
// timestamp that increases with every entry) loses its older half by
// timestamp, once with one DeleteBySecondaryRange and once as a RocksDB
// user would do it (iterate everything, Delete each key whose timestamp is
// old enough). Each prints the time of the delete and of a full scan
// afterwards, with what the scan read, right after the delete and once
// background compactions are idle. The ids are written in order (the
// timestamp follows the key, so tables hold narrow time ranges) and in a
// shuffled order (every table spans all times: the case Lethe's KiWi
// layout is for), each on a fresh database.

// secondaryDeleteVariant is one way to delete the older half.
type secondaryDeleteVariant struct {
	name string
	// secondary sets SecondaryDeleteKey and deletes with
	// DeleteBySecondaryRange; otherwise iterate and Delete.
	secondary bool
}

var secondaryDeleteVariants = []secondaryDeleteVariant{
	{name: "secondary", secondary: true},
	{name: "iterate", secondary: false},
}

// secondaryDeleteTimestamp is the attribute of a secondarydelete value.
func secondaryDeleteTimestamp(_, value []byte) (uint64, bool) {
	if len(value) < 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(value), true
}

// secondaryDeleteIdleLimit bounds the wait for background work.
const secondaryDeleteIdleLimit = 5 * time.Minute

// benchSecondaryDelete runs every variant on both key orders.
func benchSecondaryDelete(r *benchRunner, t *benchThread) error {
	c := &r.cfg
	fmt.Fprintf(r.out, "secondarydelete : %d entries of %d-byte values (8-byte timestamp first), the older %d deleted by timestamp\n",
		c.num, max(c.valueSize, 8), c.num/2)
	for _, shuffled := range []bool{false, true} {
		for _, v := range secondaryDeleteVariants {
			o, err := r.options()
			if err != nil {
				return err
			}
			if v.secondary {
				o.SecondaryDeleteKey = secondaryDeleteTimestamp
			}
			if err := r.recreateWith(o); err != nil {
				return err
			}
			r.done.Store(0)
			order := "ordered"
			if shuffled {
				order = "shuffled"
			}
			if err := r.secondaryDeleteRun(t, v, shuffled, fmt.Sprintf("%-8s %-9s", order, v.name)); err != nil {
				return fmt.Errorf("%s %s: %w", order, v.name, err)
			}
		}
	}
	t.finished(1, 0)
	return nil
}

// secondaryDeletePermute maps entry i to its id: itself, or (shuffled) a
// multiplicative permutation of [0, n).
func secondaryDeletePermute(i, n int64, shuffled bool) int64 {
	if !shuffled || n < 2 {
		return i
	}
	p := int64(2654435761) % n
	for gcd(p, n) != 1 {
		p++
	}
	return int64((uint64(i)*uint64(p) + 12345) % uint64(n))
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// secondaryDeleteRun writes the series, deletes the older half and scans.
func (r *benchRunner) secondaryDeleteRun(t *benchThread, v secondaryDeleteVariant, shuffled bool, label string) error {
	c := &r.cfg
	n := c.num
	cut := uint64(n / 2)
	start := monotime.Now()
	b := r.db.NewBatch()
	val := make([]byte, max(c.valueSize, 8))
	for i := int64(0); i < n; {
		b.Reset()
		for j := 0; j < 1000 && i < n; j++ {
			binary.BigEndian.PutUint64(val, uint64(i))
			copy(val[8:], t.value())
			b.Put(t.makeKey(secondaryDeletePermute(i, n, shuffled)), val)
			i++
		}
		if err := r.db.Write(b, r.wo); err != nil {
			return err
		}
	}
	if err := r.db.Flush(); err != nil {
		return err
	}
	wrote := monotime.Since(start)
	if !waitIdle(r.db, false) {
		fmt.Fprintf(r.out, "secondarydelete : %s : background work still running after %v\n", label, secondaryDeleteIdleLimit)
	}
	fmt.Fprintf(r.out, "secondarydelete : %s : wrote in %.3f s; tables %s\n", label, wrote.Seconds(), deleteScanShape(r.db.Metrics()))
	start = monotime.Now()
	deleted := int64(-1) // unknown: DeleteBySecondaryRange does not count
	if v.secondary {
		if err := r.db.DeleteBySecondaryRange(0, cut, r.wo); err != nil {
			return err
		}
	} else {
		var err error
		if deleted, err = iterateAndDelete(r.db, r.wo, cut); err != nil {
			return err
		}
	}
	took := monotime.Since(start)
	what := "DeleteBySecondaryRange"
	if !v.secondary {
		what = fmt.Sprintf("iterate + %d Deletes", deleted)
	}
	fmt.Fprintf(r.out, "secondarydelete : %s : %s in %.3f s\n", label, what, took.Seconds())
	if err := r.secondaryDeleteScan(label, "right after the delete"); err != nil {
		return err
	}
	start = monotime.Now()
	idle := waitIdle(r.db, v.secondary)
	m := r.db.Metrics()
	state := fmt.Sprintf("background work idle after %.3f s", monotime.Since(start).Seconds())
	if !idle {
		state = fmt.Sprintf("background work still running after %v", secondaryDeleteIdleLimit)
	}
	// Compaction bytes are cumulative over the run and count the inputs
	// dropped unread too.
	fmt.Fprintf(r.out, "secondarydelete : %s : %s; tables %s; %d compactions, %.1f MiB compacted in, %.1f MiB out; %d tables and %d blocks dropped unread, %d live secondary tombstones\n",
		label, state, deleteScanShape(m), m.Compact.Count, float64(m.Compact.BytesRead)/(1<<20), float64(m.Compact.BytesWritten)/(1<<20),
		m.SecondaryDelete.DroppedFiles, m.SecondaryDelete.SkippedBlocks, m.SecondaryDelete.LiveTombstones)
	return r.secondaryDeleteScan(label, "once compactions are idle")
}

// iterateAndDelete deletes every key whose timestamp is below cut, found
// by a full scan, 1000 Deletes per batch, and returns how many it deleted.
func iterateAndDelete(db *shale.DB, wo *shale.WriteOptions, cut uint64) (int64, error) {
	it := db.NewIterator(nil)
	b := db.NewBatch()
	var n int64
	var err error
	inBatch := 0
	for ok := it.First(); ok; ok = it.Next() {
		if ts, has := secondaryDeleteTimestamp(it.Key(), it.Value()); !has || ts >= cut {
			continue
		}
		b.Delete(it.Key())
		n++
		if inBatch++; inBatch >= 1000 {
			inBatch = 0
			if err = db.Write(b, wo); err != nil {
				break
			}
			b.Reset()
		}
	}
	if err == nil && !b.Empty() {
		err = db.Write(b, wo)
	}
	return n, errors.Join(err, it.Err(), it.Close())
}

// secondaryDeleteScan times a full forward scan and prints what it read.
func (r *benchRunner) secondaryDeleteScan(label, when string) error {
	ro := *r.ro
	var pc shale.PerfContext
	ro.PerfContext = &pc
	before := r.db.Metrics()
	start := monotime.Now()
	it := r.db.NewIterator(&ro)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	elapsed := monotime.Since(start)
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return err
	}
	after := r.db.Metrics()
	fmt.Fprintf(r.out, "secondarydelete : %s : scan %s: %d keys in %.3f s, %d blocks (%.1f MiB) read from tables, internal_delete_skipped_count %d, internal_key_skipped_count %d\n",
		label, when, n, elapsed.Seconds(), after.IO.BlockReads-before.IO.BlockReads,
		float64(after.IO.TableBytesRead-before.IO.TableBytesRead)/(1<<20), pc.InternalDeleteSkippedCount, pc.InternalKeySkippedCount)
	return nil
}

// waitIdle waits until no flush or compaction has run for a second (and,
// with tombstones, until no secondary tombstone is live), at most
// secondaryDeleteIdleLimit; it reports whether it got there.
func waitIdle(db *shale.DB, tombstones bool) bool {
	deadline := time.Now().Add(secondaryDeleteIdleLimit)
	last := db.Metrics()
	stable := time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		m := db.Metrics()
		if m.Compact.Count != last.Compact.Count || m.Flush.Count != last.Flush.Count || m.MemtableCount > 1 {
			last, stable = m, time.Now()
			continue
		}
		if time.Since(stable) >= time.Second && (!tombstones || m.SecondaryDelete.LiveTombstones == 0) {
			return true
		}
	}
	return false
}
