package compact

import (
	"errors"
	"sort"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/rangedel"
)

// OutputWriter receives the entries of one output file. The DB implements it
// around sstable.Writer. Add is called in internal-key order; the key and
// value are only valid during the call. AddRangeTombstone is called after the
// last Add of the file, with fragments in Start order and, within a fragment,
// seqnums newest first.
type OutputWriter interface {
	// Add appends a point entry.
	Add(key base.InternalKey, value []byte) error
	// AddRangeTombstone records the tombstone [start, end) at seq.
	AddRangeTombstone(start, end []byte, seq base.SeqNum) error
	// EstimatedSize returns the file size if it were closed now.
	EstimatedSize() uint64
	// Close finishes the file.
	Close() error
}

// RunOptions describes one compaction or flush for Run.
type RunOptions struct {
	// Cmp orders user keys (nil = base.DefaultComparer).
	Cmp *base.Comparer
	// Input yields the merged point entries of all inputs in internal-key
	// order. Run positions it with First and Next; the caller closes it.
	Input base.InternalIterator
	// RangeDels are the fragmented tombstones of all inputs, sorted by Start.
	RangeDels []rangedel.Span
	// Snapshots are the live snapshots, ascending.
	Snapshots []base.SeqNum
	// ElideTombstone reports that no entry of userKey can exist below the
	// output level (nil = never).
	ElideTombstone func(userKey []byte) bool
	// ElideRangeTombstone reports the same for every key of [start, end)
	// (nil = never).
	ElideRangeTombstone func(start, end []byte) bool
	// KeepShadowedTombstones keeps, behind a newer Set, Merge or BlobIndex
	// of its key, the newest Delete or SingleDelete that version hides in
	// its stripe, unless ElideTombstone says nothing of the key lies below.
	// Dropping it would leave the deleted data below with no tombstone above
	// to push it out: delete persistence (Options.DeletePersistenceThreshold)
	// sets it so that the data's deadline follows the tombstone down.
	KeepShadowedTombstones bool
	// SecondaryTombstones are the live secondary tombstones (by Seq
	// ascending), applied with SecondaryDeleteKey: the newest version of a
	// key in its stripe, a Set older than a tombstone of the same stripe
	// whose attribute is in the tombstone's range, is deleted, dropped when
	// ElideTombstone says nothing of the key lies below (in the oldest
	// stripe), else replaced by a Delete at its seqnum, so that older
	// versions stay hidden.
	SecondaryTombstones []manifest.SecondaryTombstone
	// SecondaryDeleteKey extracts the attribute of a Set (nil: no entry
	// has one).
	SecondaryDeleteKey func(key, value []byte) (uint64, bool)
	// Merger resolves merge operands (nil: every operand is kept, and so is
	// everything under it). With one, the operands of a stripe are merged
	// onto the value under them in the same stripe (a Set at the newest
	// operand's seqnum), or onto nothing when a tombstone or a deleted entry
	// is under them, or when the key has no older entry in the input and
	// ElideTombstone says none lies below; otherwise (the base is in an
	// older stripe, or may be below the output level) adjacent operands are
	// combined where PartialMerge can and kept as operands.
	Merger Merger
	// OnMergeError, when set, is told of a key whose FullMerge failed. When
	// it returns nil the key's operands, and the value under them, are
	// written as they are, and Run goes on; an error it returns fails Run.
	// Without it the merge's error fails Run.
	OnMergeError func(key []byte, err error) error
	// NewOutput opens the next output file.
	NewOutput func() (OutputWriter, error)
	// TargetFileSize cuts an output once its EstimatedSize reaches it.
	TargetFileSize uint64
	// Grandparents are the files of the level below the output level; an
	// output is cut once the grandparent bytes it spans exceed
	// 10*TargetFileSize, bounding the cost of compacting it later.
	Grandparents []*manifest.FileMetadata
}

// Merger resolves merge operands for Run; the DB implements it around
// Options.MergeOperator.
type Merger interface {
	// FullMerge applies operands, oldest first, to base (of kind Set or
	// BlobIndex, which it resolves) when hasBase, else to nothing.
	FullMerge(key, base []byte, baseKind base.Kind, hasBase bool, operands [][]byte) ([]byte, error)
	// PartialMerge combines two adjacent operands, left the older; ok is
	// false when it cannot.
	PartialMerge(key, left, right []byte) (merged []byte, ok bool)
}

// Stats counts what Run did with point entries. InputEntries equals
// OutputEntries plus the Dropped counts and Merged.
type Stats struct {
	// DroppedBySecondary counts Sets a secondary tombstone deleted that
	// were dropped; SecondaryToDelete those replaced by a Delete (counted
	// in OutputEntries).
	DroppedBySecondary, SecondaryToDelete int64
	// InputEntries and OutputEntries count point entries read and written.
	InputEntries, OutputEntries int64
	// DroppedShadowed counts versions hidden by a newer version of the same
	// stripe, including a Set annihilated by a SingleDelete.
	DroppedShadowed int64
	// KeptShadowed counts the hidden tombstones written anyway
	// (KeepShadowedTombstones); OutputEntries includes them.
	KeptShadowed int64
	// DroppedTombstones counts Delete and SingleDelete entries dropped.
	DroppedTombstones int64
	// DroppedByRangeDel counts entries covered by a range tombstone of the
	// same stripe.
	DroppedByRangeDel int64
	// Merged counts the entries (operands and the values under them) that
	// merges consumed: replaced by fewer entries, counted in OutputEntries.
	Merged int64
	// MergeErrors counts the keys left unmerged after their FullMerge
	// failed (OnMergeError returned nil).
	MergeErrors int64
}

// inputName names the merged input in corruption errors: Run does not know
// which input file an entry came from.
const inputName = "compaction input"

// runner holds the state of one Run.
type runner struct {
	o     *RunOptions
	cmp   base.Compare
	stats Stats

	// spans are the coalesced, elided tombstones to write; spanIdx is the
	// first not fully written; lower is the cut key that starts the current
	// output (nil before the first cut).
	spans    []rangedel.Span
	spanIdx  int
	lower    []byte
	hasLower bool

	out       OutputWriter
	outOpened bool // any output was ever opened

	// grandparent cursor: gpIdx is the first grandparent not yet passed;
	// gpBytes the grandparent bytes the current output has passed.
	gpIdx   int
	gpBytes uint64
	gpLimit uint64

	// rdIdx is the first input span whose End is above the current key.
	rdIdx int

	// curKey is a copy of the current user key, keyEmitted whether an entry
	// of it was written.
	curKey     []byte
	keyEmitted bool

	// ops are the operands being merged (mergeOperands), newest first.
	ops []mergeOperand
}

// mergeOperand is one operand of a merge: its trailer and a copy of it.
type mergeOperand struct {
	trailer uint64
	value   []byte
}

// Run turns the entries of o.Input into output files, keeping what some
// snapshot (or the latest state) can see and dropping the rest. It Closes
// every output it opened, even on error. It opens no output when nothing
// survives.
func Run(o RunOptions) (Stats, error) {
	r := &runner{o: &o}
	if o.Cmp == nil {
		o.Cmp = base.DefaultComparer
	}
	r.cmp = o.Cmp.Compare
	r.gpLimit = mulSat(o.TargetFileSize, 10)
	r.spans = r.outputSpans()
	err := r.run()
	if r.out != nil {
		if err == nil {
			err = r.finishOutput(nil, false)
		} else {
			_ = r.out.Close()
			r.out = nil
		}
	}
	if err == nil && !r.outOpened && len(r.spans) > 0 {
		// Only range tombstones survive: they need a file of their own.
		if err = r.openOutput(); err == nil {
			err = r.finishOutput(nil, false)
		}
	}
	return r.stats, err
}

// stripe returns the index of the smallest snapshot >= seq, or
// len(Snapshots) for the latest stripe.
func (r *runner) stripe(seq base.SeqNum) int {
	s := r.o.Snapshots
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s[m] < seq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// outputSpans coalesces each input fragment to the newest seqnum per stripe
// and elides the oldest stripe's seqnum where ElideRangeTombstone allows.
func (r *runner) outputSpans() []rangedel.Span {
	var out []rangedel.Span
	for _, sp := range r.o.RangeDels {
		seqs := rangedel.Coalesce(sp, r.o.Snapshots).Seqs
		// Seqs are newest first: the last one is the oldest stripe's, if any.
		if n := len(seqs); n > 0 && r.stripe(seqs[n-1]) == 0 && r.o.ElideRangeTombstone != nil &&
			r.o.ElideRangeTombstone(sp.Start, sp.End) {
			seqs = seqs[:n-1]
		}
		if len(seqs) > 0 {
			out = append(out, rangedel.Span{Start: sp.Start, End: sp.End, Seqs: seqs})
		}
	}
	return out
}

// coveredSameStripe reports whether a range tombstone of the same stripe as
// the entry (key, seq) covers it. Keys arrive in ascending order.
func (r *runner) coveredSameStripe(key []byte, seq base.SeqNum, stripe int) bool {
	rd := r.o.RangeDels
	for r.rdIdx < len(rd) && r.cmp(rd[r.rdIdx].End, key) <= 0 {
		r.rdIdx++
	}
	if r.rdIdx == len(rd) || r.cmp(rd[r.rdIdx].Start, key) > 0 {
		return false
	}
	// Seqs are newest first: find the oldest tombstone newer than seq.
	seqs := rd[r.rdIdx].Seqs
	i := len(seqs) - 1
	for i >= 0 && seqs[i] <= seq {
		i--
	}
	return i >= 0 && r.stripe(seqs[i]) == stripe
}

func (r *runner) run() error {
	it := r.o.Input
	var sdKey base.InternalKey
	var sdValue []byte
	decided := -1 // stripe of curKey already decided by a newer version
	// hidingValue is set when a value decided the stripe and the newest
	// tombstone it hides is still to be kept (KeepShadowedTombstones).
	hidingValue := false
	var prevTrailer uint64
	// A SingleDelete that annihilated its Set is pending: it is written
	// only if an older version of the key remains (in an older stripe of
	// the input, or possibly below the output level), which it must keep
	// hiding. Dropping it then would resurrect that version, which can
	// exist when an earlier compaction dropped a shadowed SingleDelete.
	pendingSD := false
	var pendingSDTrailer uint64
	flushPendingSD := func(keyDone bool) error {
		if !pendingSD {
			return nil
		}
		pendingSD = false
		if keyDone && r.o.ElideTombstone != nil && r.o.ElideTombstone(r.curKey) {
			r.stats.DroppedTombstones++
			return nil
		}
		return r.emit(base.InternalKey{UserKey: r.curKey, Trailer: pendingSDTrailer}, sdValue)
	}
	valid := it.First()
	for valid {
		key := it.Key()
		r.stats.InputEntries++
		if c := r.cmp(key.UserKey, r.curKey); c != 0 || r.curKey == nil {
			if c < 0 && r.curKey != nil {
				return base.CorruptionErrorf(inputName, 0, "key %s after user key %q: out of order", key, r.curKey)
			}
			if err := flushPendingSD(true); err != nil {
				return err
			}
			r.curKey = append(r.curKey[:0], key.UserKey...)
			if r.curKey == nil {
				r.curKey = []byte{}
			}
			r.keyEmitted = false
			decided = -1
			hidingValue = false
		} else if key.Trailer >= prevTrailer {
			return base.CorruptionErrorf(inputName, 0, "key %s not older than previous version: out of order", key)
		}
		prevTrailer = key.Trailer
		seq, kind := key.SeqNum(), key.Kind()
		switch kind {
		case base.KindSet, base.KindDelete, base.KindSingleDelete, base.KindMerge, base.KindBlobIndex:
		default:
			return base.CorruptionErrorf(inputName, 0, "key %s: kind %s cannot be a point entry", key, kind)
		}
		st := r.stripe(seq)
		if st == decided && hidingValue && kind.IsTombstone() &&
			(st != 0 || r.o.ElideTombstone == nil || !r.o.ElideTombstone(r.curKey)) {
			hidingValue = false
			r.stats.KeptShadowed++
			if err := r.emit(key, it.Value()); err != nil {
				return err
			}
			valid = it.Next()
			continue
		}
		if st == decided {
			r.stats.DroppedShadowed++
			valid = it.Next()
			continue
		}
		if err := flushPendingSD(false); err != nil {
			return err
		}
		hidingValue = false
		if r.coveredSameStripe(key.UserKey, seq, st) {
			r.stats.DroppedByRangeDel++
			decided = st
			valid = it.Next()
			continue
		}
		elide := kind.IsTombstone() && st == 0 && r.o.ElideTombstone != nil && r.o.ElideTombstone(r.curKey)
		if kind == base.KindSet && r.o.SecondaryTombstones != nil && r.secondaryDeletes(it.Value(), seq, st) {
			decided = st
			if st == 0 && r.o.ElideTombstone != nil && r.o.ElideTombstone(r.curKey) {
				r.stats.DroppedBySecondary++
			} else {
				r.stats.SecondaryToDelete++
				del := base.MakeInternalKey(r.curKey, seq, base.KindDelete)
				if err := r.emit(del, nil); err != nil {
					return err
				}
			}
			valid = it.Next()
			continue
		}
		if kind == base.KindMerge {
			var decides bool
			var err error
			if valid, decides, prevTrailer, err = r.merge(key.Trailer, it.Value(), st); err != nil {
				return err
			}
			if decides {
				decided, hidingValue = st, r.o.KeepShadowedTombstones
			}
			continue
		}
		if kind == base.KindSingleDelete {
			// Look at the next older version: a Set of the same stripe is
			// annihilated together with the SingleDelete.
			sdKey = base.InternalKey{UserKey: r.curKey, Trailer: key.Trailer}
			sdValue = append(sdValue[:0], it.Value()...)
			valid = it.Next()
			if valid {
				next := it.Key()
				if r.cmp(next.UserKey, r.curKey) == 0 && (next.Kind() == base.KindSet || next.Kind() == base.KindBlobIndex) &&
					next.Trailer < prevTrailer && r.stripe(next.SeqNum()) == st {
					r.stats.InputEntries++
					r.stats.DroppedShadowed++
					prevTrailer = next.Trailer
					pendingSD, pendingSDTrailer = true, sdKey.Trailer
					decided = st
					valid = it.Next()
					continue
				}
			}
			decided = st
			if elide {
				r.stats.DroppedTombstones++
			} else if err := r.emit(sdKey, sdValue); err != nil {
				return err
			}
			continue
		}
		decided = st
		hidingValue = r.o.KeepShadowedTombstones && !kind.IsTombstone()
		if elide {
			r.stats.DroppedTombstones++
		} else if err := r.emit(key, it.Value()); err != nil {
			return err
		}
		valid = it.Next()
	}
	if err := it.Error(); err != nil {
		return err
	}
	return flushPendingSD(true)
}

// merge writes what the operands of curKey in stripe st become, the
// newest one, at trailer, at the input. It gathers the stripe's operands
// (consuming them) down to the first entry that is not one, and:
//   - under them a value, which no range or secondary tombstone of the
//     stripe deletes: merges them onto it (consuming it too) into a Set;
//   - under them a tombstone or a deleted entry: merges them onto nothing;
//     the entry stays for the caller, which drops it as shadowed (or keeps
//     a tombstone, KeepShadowedTombstones);
//   - the key's last entry in the input, and ElideTombstone says nothing of
//     it lies below: merges them onto nothing;
//   - else (an older stripe's entry under them, or possibly data below the
//     output level): combines adjacent ones where PartialMerge can, and
//     writes them as operands.
//
// The Set written has the newest operand's seqnum. Without a Merger the
// operand is written alone and decides nothing (decides false): the caller
// goes on with the next entry as if it were the newest of its stripe.
// merge returns whether the input is at an entry and the trailer of the
// last entry consumed.
func (r *runner) merge(trailer uint64, value []byte, st int) (valid, decides bool, prevTrailer uint64, err error) {
	it := r.o.Input
	key := base.InternalKey{UserKey: r.curKey, Trailer: trailer}
	if r.o.Merger == nil {
		if err := r.emit(key, value); err != nil {
			return false, false, 0, err
		}
		return it.Next(), false, trailer, nil
	}
	r.ops = append(r.ops[:0], mergeOperand{trailer: trailer, value: append([]byte(nil), value...)})
	consumed := 1 // entries of the input this merge replaces
	prevTrailer = trailer
	full := false
	var setValue []byte // the merged Set, once merged
	merged := false
	valid = it.Next()
	for ; valid; valid = it.Next() {
		next := it.Key()
		if r.cmp(next.UserKey, r.curKey) != 0 {
			break
		}
		if next.Trailer >= prevTrailer {
			return false, false, 0, base.CorruptionErrorf(inputName, 0, "key %s not older than previous version: out of order", next)
		}
		seq, kind := next.SeqNum(), next.Kind()
		if r.stripe(seq) != st {
			break // an older stripe's: the caller's
		}
		if r.coveredSameStripe(r.curKey, seq, st) {
			full = true
			break
		}
		if kind == base.KindMerge {
			r.stats.InputEntries++
			consumed++
			prevTrailer = next.Trailer
			r.ops = append(r.ops, mergeOperand{trailer: next.Trailer, value: append([]byte(nil), it.Value()...)})
			continue
		}
		full = true
		if (kind == base.KindSet || kind == base.KindBlobIndex) &&
			(kind != base.KindSet || r.o.SecondaryTombstones == nil || !r.secondaryDeletes(it.Value(), seq, st)) {
			r.stats.InputEntries++
			consumed++
			prevTrailer = next.Trailer
			// Merged before the input moves off the value.
			if setValue, err = r.o.Merger.FullMerge(r.curKey, it.Value(), kind, true, r.oldestFirst()); err != nil {
				if err = r.mergeFailed(err); err != nil {
					return false, false, 0, err
				}
				// The operands, then the value, as they are.
				if err := r.emitRaw(); err != nil {
					return false, false, 0, err
				}
				if err := r.emit(next, it.Value()); err != nil {
					return false, false, 0, err
				}
				return it.Next(), true, prevTrailer, nil
			}
			merged = true
			valid = it.Next()
		}
		break // else a tombstone, or a deleted value: the caller's
	}
	if !valid {
		if err := it.Error(); err != nil {
			return false, false, 0, err
		}
	}
	keyEnds := !valid || r.cmp(it.Key().UserKey, r.curKey) != 0
	if !merged && (full || keyEnds && r.o.ElideTombstone != nil && r.o.ElideTombstone(r.curKey)) {
		if setValue, err = r.o.Merger.FullMerge(r.curKey, nil, 0, false, r.oldestFirst()); err != nil {
			if err = r.mergeFailed(err); err != nil {
				return false, false, 0, err
			}
			// The operands as they are; what is under them stays the
			// caller's, as the newest entry of the stripe.
			return valid, false, prevTrailer, r.emitRaw()
		}
		merged = true
	}
	if merged {
		r.stats.Merged += int64(consumed - 1)
		return valid, true, prevTrailer, r.emit(base.MakeInternalKey(r.curKey, key.SeqNum(), base.KindSet), setValue)
	}
	n, err := r.emitOperands()
	r.stats.Merged += int64(consumed - n)
	return valid, true, prevTrailer, err
}

// mergeFailed handles a failed FullMerge of curKey: it returns the error
// Run must fail with, or nil when OnMergeError keeps the key unmerged.
func (r *runner) mergeFailed(err error) error {
	if r.o.OnMergeError == nil {
		return err
	}
	if err := r.o.OnMergeError(r.curKey, err); err != nil {
		return err
	}
	r.stats.MergeErrors++
	return nil
}

// emitRaw writes ops, newest first, each as it was read.
func (r *runner) emitRaw() error {
	for _, op := range r.ops {
		if err := r.emit(base.InternalKey{UserKey: r.curKey, Trailer: op.trailer}, op.value); err != nil {
			return err
		}
	}
	return nil
}

// oldestFirst returns the values of ops, oldest first.
func (r *runner) oldestFirst() [][]byte {
	out := make([][]byte, len(r.ops))
	for i, op := range r.ops {
		out[len(r.ops)-1-i] = op.value
	}
	return out
}

// emitOperands writes ops (newest first), each run of adjacent operands
// that PartialMerge combines written as one, at the newest one's trailer;
// it returns the number written.
func (r *runner) emitOperands() (int, error) {
	ops := r.ops
	// Combined from the oldest up; out is oldest first.
	var out []mergeOperand
	for i := len(ops) - 1; i >= 0; {
		acc := ops[i]
		j := i - 1
		for ; j >= 0; j-- {
			m, ok := r.o.Merger.PartialMerge(r.curKey, acc.value, ops[j].value)
			if !ok {
				break
			}
			acc = mergeOperand{trailer: ops[j].trailer, value: m}
		}
		out = append(out, acc)
		i = j
	}
	for i := len(out) - 1; i >= 0; i-- {
		if err := r.emit(base.InternalKey{UserKey: r.curKey, Trailer: out[i].trailer}, out[i].value); err != nil {
			return 0, err
		}
	}
	return len(out), nil
}

// secondaryDeletes reports whether a secondary tombstone of stripe st
// deletes the Set (curKey, value) at seq, the newest version of its key in
// st: one above seq in the same stripe (no snapshot between them sees the
// Set without the tombstone) whose range holds the Set's attribute.
func (r *runner) secondaryDeletes(value []byte, seq base.SeqNum, st int) bool {
	ts := r.o.SecondaryTombstones
	i := sort.Search(len(ts), func(i int) bool { return ts[i].Seq > seq })
	if i == len(ts) || r.stripe(ts[i].Seq) != st || r.o.SecondaryDeleteKey == nil {
		return false
	}
	attr, ok := r.o.SecondaryDeleteKey(r.curKey, value)
	if !ok {
		return false
	}
	for ; i < len(ts) && r.stripe(ts[i].Seq) == st; i++ {
		if attr >= ts[i].Lo && attr < ts[i].Hi {
			return true
		}
	}
	return false
}

// emit writes a surviving entry, first cutting the current output when this
// starts a new user key and the output is full or spans too many
// grandparent bytes.
func (r *runner) emit(key base.InternalKey, value []byte) error {
	if !r.keyEmitted {
		gp := r.o.Grandparents
		for r.gpIdx < len(gp) && r.cmp(key.UserKey, gp[r.gpIdx].Largest.UserKey) > 0 {
			if r.out != nil {
				r.gpBytes += gp[r.gpIdx].Size
			}
			r.gpIdx++
		}
		if r.out != nil && (r.out.EstimatedSize() >= r.o.TargetFileSize || r.gpBytes > r.gpLimit) {
			if err := r.finishOutput(key.UserKey, true); err != nil {
				return err
			}
		}
	}
	if r.out == nil {
		if err := r.openOutput(); err != nil {
			return err
		}
	}
	r.keyEmitted = true
	r.stats.OutputEntries++
	return r.out.Add(key, value)
}

func (r *runner) openOutput() error {
	if r.o.NewOutput == nil {
		return errors.New("shale: compact.RunOptions.NewOutput is nil")
	}
	w, err := r.o.NewOutput()
	if err != nil {
		return err
	}
	r.out, r.outOpened = w, true
	r.gpBytes = 0
	return nil
}

// finishOutput writes the range tombstones of the current output, those
// starting before cut (all of them without one), truncated to
// [lower, cut), and closes it. The output is closed even on error.
func (r *runner) finishOutput(cut []byte, hasCut bool) error {
	err := r.writeSpans(cut, hasCut)
	if cerr := r.out.Close(); err == nil {
		err = cerr
	}
	r.out = nil
	if hasCut {
		r.lower = append(r.lower[:0], cut...)
		r.hasLower = true
	}
	return err
}

func (r *runner) writeSpans(cut []byte, hasCut bool) error {
	for r.spanIdx < len(r.spans) {
		sp := &r.spans[r.spanIdx]
		start := sp.Start
		if r.hasLower && r.cmp(start, r.lower) < 0 {
			start = r.lower
		}
		if hasCut && r.cmp(start, cut) >= 0 {
			return nil
		}
		end, done := sp.End, true
		if hasCut && r.cmp(end, cut) > 0 {
			end, done = cut, false
		}
		for _, seq := range sp.Seqs {
			if err := r.out.AddRangeTombstone(start, end, seq); err != nil {
				return err
			}
		}
		if !done {
			return nil
		}
		r.spanIdx++
	}
	return nil
}
