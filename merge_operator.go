package shale

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
)

// MergeOperator resolves the operands DB.Merge and Batch.Merge write
// (RocksDB's MergeOperator). Reads and compactions call it; it must be
// deterministic and safe for concurrent use, and must not keep or modify
// the slices it is given.
type MergeOperator interface {
	// Name identifies the operator; it is recorded in the MANIFEST at the
	// first Merge, and a database reopened under another name is refused.
	Name() string
	// FullMerge applies operands, oldest first, to existing (nil when the
	// key has no value; a present empty value is a non-nil empty slice).
	FullMerge(key, existing []byte, operands [][]byte) ([]byte, error)
	// PartialMerge combines two adjacent operands, left the older; ok is
	// false when it cannot.
	PartialMerge(key, left, right []byte) (merged []byte, ok bool)
}

// ErrMustMerge, wrapped into the error a MergeOperator's FullMerge returns
// (fmt.Errorf("...: %w", shale.ErrMustMerge), or errors.Join), scopes the
// failure to the reads that must merge the key (RocksDB's OpFailureScope
// kMustMerge): Get, MultiGet and iterators return the error, while flushes
// and compactions write the key's entries unmerged and the DB stays
// writable. Any other error of FullMerge (kTryMerge, RocksDB's default)
// fails the flush or compaction as well: a background error, which makes
// the DB read-only until Resume. The built-in operators scope theirs so.
var ErrMustMerge = errors.New("shale: merge failed (scoped to the reads of the key)")

// mustMerge is an error of a built-in operator, scoped to the reads
// (ErrMustMerge): one bad operand never stops the DB's writes.
type mustMerge struct{ error }

func (e mustMerge) Unwrap() error        { return e.error }
func (e mustMerge) Is(target error) bool { return target == ErrMustMerge }

// ErrNoMergeOperator is returned for a Merge on a DB without
// Options.MergeOperator, and for a read that meets merge operands then.
var ErrNoMergeOperator = errors.New("shale: no merge operator: set Options.MergeOperator to write or read merge operands")

// UInt64AddOperator treats values and operands as unsigned 64-bit
// little-endian counters and adds them (RocksDB's UInt64AddOperator; a
// missing value counts as 0, and the sum wraps). A value or operand not
// 8 bytes long is an error.
var UInt64AddOperator MergeOperator = uint64AddOperator{}

type uint64AddOperator struct{}

func (uint64AddOperator) Name() string { return "UInt64AddOperator" }

func decodeCounter(what string, b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, mustMerge{fmt.Errorf("shale: UInt64AddOperator: %s is %d bytes, not an 8-byte little-endian counter", what, len(b))}
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (uint64AddOperator) FullMerge(key, existing []byte, operands [][]byte) ([]byte, error) {
	var sum uint64
	if existing != nil {
		v, err := decodeCounter("the existing value", existing)
		if err != nil {
			return nil, err
		}
		sum = v
	}
	for _, op := range operands {
		v, err := decodeCounter("an operand", op)
		if err != nil {
			return nil, err
		}
		sum += v
	}
	return binary.LittleEndian.AppendUint64(nil, sum), nil
}

func (uint64AddOperator) PartialMerge(key, left, right []byte) ([]byte, bool) {
	if len(left) != 8 || len(right) != 8 {
		return nil, false // FullMerge reports the bad operand
	}
	return binary.LittleEndian.AppendUint64(nil, binary.LittleEndian.Uint64(left)+binary.LittleEndian.Uint64(right)), true
}

// StringAppendOperator joins a value and its operands, oldest first, with
// delim between them (RocksDB's StringAppendOperator; delim may be a
// string, a byte or a rune, as RocksDB takes a char or a string).
func StringAppendOperator[D string | byte | rune](delim D) MergeOperator {
	var d string
	switch v := any(delim).(type) {
	case string:
		d = v
	case byte:
		d = string([]byte{v})
	case rune:
		d = string(v)
	}
	return stringAppendOperator{delim: d}
}

type stringAppendOperator struct{ delim string }

func (stringAppendOperator) Name() string { return "StringAppendOperator" }

func (o stringAppendOperator) FullMerge(key, existing []byte, operands [][]byte) ([]byte, error) {
	n := len(existing)
	for _, op := range operands {
		n += len(o.delim) + len(op)
	}
	out := make([]byte, 0, n)
	first := existing == nil
	out = append(out, existing...)
	for _, op := range operands {
		if !first {
			out = append(out, o.delim...)
		}
		first = false
		out = append(out, op...)
	}
	return out, nil
}

func (o stringAppendOperator) PartialMerge(key, left, right []byte) ([]byte, bool) {
	out := make([]byte, 0, len(left)+len(o.delim)+len(right))
	out = append(append(append(out, left...), o.delim...), right...)
	return out, true
}

// Merge adds operand to key's value through Options.MergeOperator.
func (d *DB) Merge(key, operand []byte, wo *WriteOptions) error {
	return d.writeOne(base.KindMerge, key, operand, true, wo)
}

// Merge adds a merge of operand into key's value (DB.Merge).
func (b *Batch) Merge(key, operand []byte) { b.add(base.KindMerge, key, operand, true) }

// checkMergeOperator refuses to open a database whose merge operands were
// written under another operator than Options.MergeOperator. Without an
// operator the database opens, and reads that meet operands fail.
func (d *DB) checkMergeOperator() error {
	v := d.versions.Current()
	defer v.Unref()
	if op := d.opts.MergeOperator; op != nil && v.MergeOperatorName != "" && v.MergeOperatorName != op.Name() {
		return base.InvalidArgumentf("shale: the merge operands of %s were written under merge operator %q, but Options.MergeOperator is %q",
			d.dirname, v.MergeOperatorName, op.Name())
	}
	return nil
}

// recordMergeOperator makes sure the MANIFEST names Options.MergeOperator
// before the first Merge is written, and refuses a Merge without one.
func (d *DB) recordMergeOperator() error {
	op := d.opts.MergeOperator
	if op == nil {
		return ErrNoMergeOperator
	}
	if d.mergeRecorded.Load() {
		return nil
	}
	d.mergeRecordMu.Lock()
	defer d.mergeRecordMu.Unlock()
	if d.mergeRecorded.Load() {
		return nil
	}
	d.mu.Lock()
	bgErr := d.mu.bgErr
	d.mu.Unlock()
	if bgErr != nil {
		// The write would fail the same way; no edit meanwhile.
		return fmt.Errorf("%w: %w", ErrReadOnly, bgErr)
	}
	v := d.versions.Current()
	recorded := v.MergeOperatorName
	v.Unref()
	if recorded != op.Name() {
		if err := d.versions.LogAndApply(&manifest.VersionEdit{MergeOperatorName: op.Name()}); err != nil {
			return err
		}
	}
	d.mergeRecorded.Store(true)
	return nil
}

// mergeError wraps an operator's error with the key it failed on.
func mergeError(key []byte, err error) error {
	return fmt.Errorf("shale: merge of key %q: %w", key, err)
}

// fullMerge applies operands (oldest first) to base, present when hasBase.
func (d *DB) fullMerge(key, base []byte, hasBase bool, operands [][]byte) ([]byte, error) {
	op := d.opts.MergeOperator
	if op == nil {
		return nil, ErrNoMergeOperator
	}
	if hasBase && base == nil {
		base = []byte{}
	} else if !hasBase {
		base = nil
	}
	v, err := op.FullMerge(key, base, operands)
	if err != nil {
		d.opts.Statistics.add(TickerNumberMergeFailures, 1)
		return nil, mergeError(key, err)
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

// mergeOperands gathers the operands of one key, newest first, into one
// buffer, and hands them to FullMerge oldest first.
type mergeOperands struct {
	buf  []byte
	ends []int
	ops  [][]byte
}

func (m *mergeOperands) reset() { m.buf, m.ends = m.buf[:0], m.ends[:0] }

// add copies an operand older than every one added before: operands
// arrive newest first.
func (m *mergeOperands) add(op []byte) {
	m.buf = append(m.buf, op...)
	m.ends = append(m.ends, len(m.buf))
}

func (m *mergeOperands) len() int { return len(m.ends) }

// oldestFirst returns the operands, oldest first, aliasing buf.
func (m *mergeOperands) oldestFirst() [][]byte {
	m.ops = m.ops[:0]
	for i := len(m.ends) - 1; i >= 0; i-- {
		start := 0
		if i > 0 {
			start = m.ends[i-1]
		}
		m.ops = append(m.ops, m.buf[start:m.ends[i]:m.ends[i]])
	}
	return m.ops
}

// compactionMerger is compact.Merger over Options.MergeOperator: a base
// value in a blob file is read (without filling the cache). A failing merge
// fails the job unless the operator's error matches ErrMustMerge
// (compact.RunOptions.OnMergeError).
type compactionMerger struct{ d *DB }

func (m compactionMerger) FullMerge(key, baseValue []byte, baseKind base.Kind, hasBase bool, operands [][]byte) ([]byte, error) {
	if hasBase && baseKind == base.KindBlobIndex {
		v, err := m.d.readBlobValue(key, baseValue, false, nil)
		if err != nil {
			return nil, err
		}
		baseValue = v
	}
	return m.d.fullMerge(key, baseValue, hasBase, operands)
}

func (m compactionMerger) PartialMerge(key, left, right []byte) ([]byte, bool) {
	return m.d.opts.MergeOperator.PartialMerge(key, left, right)
}
