package shale

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/shaledb/shale/internal/base"
)

// This file holds what the model test (TestModel) and the metamorphic test
// (TestMetamorphic) share: a generator of random operation sequences, two
// targets that run them (the DB and the in-memory model), and runOp, which
// runs one operation on a target and renders everything observable about it
// as lines of an observation log. The generator never looks at results, so a
// seed gives the same sequence whatever runs it, and two targets that behave
// alike write identical logs.

// opKind names one operation of a generated sequence.
type opKind uint8

const (
	opPut opKind = iota
	opDelete
	opSingleDelete
	opDeleteRange
	opBatch
	opGet
	opMultiGet
	opIter
	opNewSnapshot
	opReleaseSnapshot
	opFlush
	opCompactRange
	opReopen
	// opReadOnlyScan opens the database with OpenForReadOnly beside the
	// writer and scans it.
	opReadOnlyScan
	// opSecondaryDelete is DeleteBySecondaryRange(lo, hi) with the
	// attributes of modelSecondaryKey; generated only when the generator's
	// secondary flag is set.
	opSecondaryDelete
	// opMerge is Merge(key, value) under the op's merge operator; generated
	// only when the generator has one.
	opMerge

	// Transactions (issue 16, item 5).

	// opTxn writes its batch entries in an optimistic transaction, scans
	// the transaction's iterator (its writes over the DB) and commits;
	// generated only when the generator's txns flag is set.
	opTxn
	// --- checkpoints (issue 16, item 1) ---

	// opCheckpoint takes a checkpoint into a fresh directory, opens it
	// (read-only, or read-write with checkpointReadWrite) and scans it;
	// generated only when the generator's checkpoints flag is set.
	opCheckpoint
	// RepairDB (issue 17, item 1).

	// opRepair closes the DB, removes its MANIFEST, repairs it with
	// Repair and opens it again; generated only when the generator's
	// repairs flag is set.
	opRepair

	// --- backups (issue 16, item 2) ---
	// opBackupRestore backs the DB up (BackupEngine.CreateNewBackup),
	// restores the backup into another directory and scans it there;
	// generated only when the generator's backups flag is set.
	opBackupRestore

	// External SST ingestion (ingest.go).

	// opIngest writes the op's batch (range deletions, then points in
	// strictly increasing key order) to an external table with
	// SSTFileWriter and ingests it (moving it when op.move): a batch newer
	// than everything. Generated only when the generator's ingest flag is
	// set.
	opIngest

	// --- range-over-func scans (issue 19, item 3; scan_test.go) ---

	// opScan ranges over DB.Scan or DB.ScanReverse (op.reverse) of
	// [lower, upper) at op.snap, the bounds passed as op.scanBounds says,
	// breaking out after op.scanLimit entries when it is set. Generated
	// only when the generator's scans flag is set.
	opScan
	// --- read deadlines (issue 19, item 4) ---

	// opDeadlineRead is a Get of key, a MultiGet of keys and a scan of
	// [lower, upper), all with a far ReadOptions.Deadline and IOTimeout
	// set: a deadline that is met changes no answer. Generated only when
	// the generator's deadlines flag is set (read_deadline_test.go).
	opDeadlineRead
)

// iterStepKind names one move of an iterator.
type iterStepKind uint8

const (
	stepFirst iterStepKind = iota
	stepLast
	stepSeekGE
	stepSeekLT // SeekForPrev, then Prev past an exact match
	stepSeekForPrev
	stepNext
	stepPrev
	stepScanFwd // First, then Next to the end
	stepScanRev // Last, then Prev to the start
	// stepSetBounds changes the bounds to [key, upper); stepRefresh moves
	// the iterator to the latest state. Both leave it unpositioned.
	stepSetBounds
	stepRefresh
)

var stepNames = [...]string{"First", "Last", "SeekGE", "SeekLT", "SeekForPrev", "Next", "Prev", "ScanFwd", "ScanRev", "SetBounds", "Refresh"}

type iterStep struct {
	kind  iterStepKind
	key   []byte // for the seeks; the lower bound of stepSetBounds
	upper []byte // the upper bound of stepSetBounds
}

// batchEntry is one write of a batch: opPut, opDelete, opDeleteRange
// (value is then the end key) or opMerge (under the batch op's merge
// operator).
type batchEntry struct {
	kind       opKind
	key, value []byte
}

// modelOp is one generated operation.
type modelOp struct {
	kind opKind
	// key and value: the Put's key and value, the Delete's key, the range
	// [key, value) of DeleteRange and CompactRange (nil = unbounded), the
	// key of a Get.
	key, value []byte
	batch      []batchEntry
	sync       bool
	// snap is a snapshot id: the one a read uses (0 = latest state), or the
	// one NewSnapshot creates and ReleaseSnapshot releases.
	snap         int
	keys         [][]byte // MultiGet
	lower, upper []byte   // iterator bounds (nil = none)
	steps        []iterStep
	lo, hi       uint64 // opSecondaryDelete's range
	// merge is the merge operator of opMerge and of a batch's merges,
	// which the model applies.
	merge MergeOperator
	// mode is the iterator's prefix mode (opIter).
	mode iterMode

	// checkpointReadWrite makes opCheckpoint open its checkpoint with Open
	// rather than OpenForReadOnly.
	checkpointReadWrite bool

	// move is opIngest's IngestExternalFileOptions.MoveFiles.
	move bool

	// --- range-over-func scans (issue 19, item 3) ---
	// reverse makes opScan descend (ScanReverse); scanBounds is how it
	// passes lower and upper (scanBoundsMode); scanLimit, when set, breaks
	// out of the loop after that many entries.
	reverse    bool
	scanBounds scanBoundsMode
	scanLimit  int
}

// iterMode is how an iterator of opIter reads: ReadOptions.PrefixSameAsStart
// and TotalOrderSeek. Only a generator with prefixSeeks set makes other
// than the zero mode.
type iterMode struct{ prefixSameAsStart, totalOrderSeek bool }

func (m iterMode) String() string {
	switch {
	case m.prefixSameAsStart && m.totalOrderSeek:
		return " prefix-same-as-start,total-order"
	case m.prefixSameAsStart:
		return " prefix-same-as-start"
	case m.totalOrderSeek:
		return " total-order"
	}
	return ""
}

func (op modelOp) String() string {
	switch op.kind {
	case opPut:
		return fmt.Sprintf("put %s=%s sync=%v", op.key, fmtValue(op.value), op.sync)
	case opDelete:
		return fmt.Sprintf("delete %s sync=%v", op.key, op.sync)
	case opSingleDelete:
		return fmt.Sprintf("singledelete %s sync=%v", op.key, op.sync)
	case opDeleteRange:
		return fmt.Sprintf("deleterange [%s,%s) sync=%v", op.key, op.value, op.sync)
	case opMerge:
		return fmt.Sprintf("merge %s+=%s sync=%v", op.key, fmtValue(op.value), op.sync)
	case opBatch:
		var b strings.Builder
		fmt.Fprintf(&b, "batch sync=%v:", op.sync)
		for _, e := range op.batch {
			switch e.kind {
			case opPut:
				fmt.Fprintf(&b, " put %s=%s", e.key, fmtValue(e.value))
			case opDelete:
				fmt.Fprintf(&b, " delete %s", e.key)
			case opDeleteRange:
				fmt.Fprintf(&b, " deleterange [%s,%s)", e.key, e.value)
			case opMerge:
				fmt.Fprintf(&b, " merge %s+=%s", e.key, fmtValue(e.value))
			}
		}
		return b.String()
	case opGet:
		return fmt.Sprintf("get %s snap#%d", op.key, op.snap)
	case opMultiGet:
		return fmt.Sprintf("multiget %s snap#%d", bytes.Join(op.keys, []byte(",")), op.snap)
	case opIter:
		return fmt.Sprintf("iter [%s,%s) snap#%d%s, %d steps", op.lower, op.upper, op.snap, op.mode, len(op.steps))
	case opNewSnapshot:
		return fmt.Sprintf("new snapshot #%d", op.snap)
	case opReleaseSnapshot:
		return fmt.Sprintf("release snapshot #%d", op.snap)
	case opFlush:
		return "flush"
	case opCompactRange:
		return fmt.Sprintf("compactrange [%s,%s]", op.key, op.value)
	case opReopen:
		return "close and reopen"
	case opReadOnlyScan:
		return "open read-only beside the writer and scan"
	case opSecondaryDelete:
		return fmt.Sprintf("deletebysecondaryrange [%d,%d) sync=%v", op.lo, op.hi, op.sync)
	case opTxn:
		b := op
		b.kind = opBatch
		return "txn of " + b.String()
	case opCheckpoint:
		return fmt.Sprintf("checkpoint and scan it (read-write=%v)", op.checkpointReadWrite)
	case opRepair:
		return "close, remove the MANIFEST, repair and reopen"

	// External SST ingestion.
	case opIngest:
		var b strings.Builder
		fmt.Fprintf(&b, "ingest move=%v:", op.move)
		for _, e := range op.batch {
			switch e.kind {
			case opPut:
				fmt.Fprintf(&b, " put %s=%s", e.key, fmtValue(e.value))
			case opDelete:
				fmt.Fprintf(&b, " delete %s", e.key)
			case opDeleteRange:
				fmt.Fprintf(&b, " deleterange [%s,%s)", e.key, e.value)
			case opMerge:
				fmt.Fprintf(&b, " merge %s+=%s", e.key, fmtValue(e.value))
			}
		}
		return b.String()

	// --- range-over-func scans (issue 19, item 3) ---
	case opScan:
		return fmt.Sprintf("scan [%s,%s) snap#%d reverse=%v bounds=%s limit=%d", op.lower, op.upper, op.snap, op.reverse, op.scanBounds, op.scanLimit)
	// --- read deadlines (issue 19, item 4) ---
	case opDeadlineRead:
		return fmt.Sprintf("deadline-read get %s multiget %q scan [%s,%s) snap#%d", op.key, op.keys, op.lower, op.upper, op.snap)
	}
	return fmt.Sprintf("op kind %d", op.kind)
}

// opGenerator produces a random operation sequence from a seed. It tracks
// only what the sequence itself decides (which keys may be single-deleted,
// which snapshots are live), never a target's answers.
type opGenerator struct {
	rng     *rand.Rand
	numKeys int
	n       int // operations generated so far
	// putsSince counts Puts of a key since it was last deleted; SingleDelete
	// is only defined for a key Put exactly once (2 = "more than once, or
	// unknown").
	putsSince map[string]int
	liveSnaps []int
	lastSnap  int
	// secondary makes the sequence hold opSecondaryDelete; off, the
	// sequence of a seed is what it was before that op existed.
	secondary bool
	// merge makes the sequence hold merges under it (opMerge, and merges
	// in batches); nil, the sequence of a seed is what it was before. A
	// sequence never holds both merges and secondary deletes: the model
	// keeps only each key's merged value, while a secondary tombstone
	// deletes the Set under operands (see decisions.md).
	merge MergeOperator
	// counters makes every value and operand an 8-byte little-endian
	// counter, for UInt64AddOperator.
	counters bool
	// filterValues makes some values ones modelFilter removes ("rm:") or
	// changes ("chg:"); never with merges.
	filterValues bool
	// prefixSeeks makes iterators in prefix mode (iterMode) and seeks to
	// the first key of a prefix (modelPrefixLen bytes of a key); off, the
	// sequence is what it was before prefix seeks existed.
	prefixSeeks bool

	// txns makes the sequence hold opTxn; off, the sequence of a seed is
	// what it was before transactions existed.
	txns bool
	// checkpoints makes the sequence hold opCheckpoint; off, the sequence
	// of a seed is what it was before checkpoints existed.
	checkpoints bool
	// repairs makes the sequence hold opRepair; off, the sequence of a
	// seed is what it was before repairs existed. Never with secondary
	// deletes: live secondary tombstones live only in the MANIFEST.
	repairs bool

	// --- backups (issue 16, item 2) ---
	// backups makes the sequence hold opBackupRestore; off, the sequence
	// of a seed is what it was before that op existed.
	backups bool

	// ingest makes the sequence hold opIngest; off, the sequence of a seed
	// is what it was before ingestion existed.
	ingest bool

	// --- range-over-func scans (issue 19, item 3) ---
	// scans makes the sequence hold opScan; off, the sequence of a seed is
	// what it was before scans existed.
	scans bool
	// --- read deadlines (issue 19, item 4) ---
	// deadlines makes the sequence hold opDeadlineRead; off, the sequence
	// of a seed is what it was before that op existed.
	deadlines bool
}

// modelPrefixLen is the length of the prefixes of the model tests' prefix
// extractors: "key0012" of "key00123", ten keys each.
const modelPrefixLen = 7

func newOpGenerator(seed uint64, numKeys int) *opGenerator {
	return &opGenerator{
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		numKeys:   numKeys,
		putsSince: map[string]int{},
	}
}

// generateOps returns the first n operations of seed's sequence.
func generateOps(seed uint64, n, numKeys int) []modelOp {
	return generateOpsWith(newOpGenerator(seed, numKeys), n)
}

// generateOpsWith returns the next n operations of g.
func generateOpsWith(g *opGenerator, n int) []modelOp {
	ops := make([]modelOp, n)
	for i := range ops {
		ops[i] = g.next()
	}
	return ops
}

// modelSecondaryKey is the SecondaryDeleteKey of the model tests: the
// number of the operation that generated the value (its "v<n>-" prefix),
// none for every fifth one.
func modelSecondaryKey(_, value []byte) (uint64, bool) {
	if len(value) < 2 || value[0] != 'v' {
		return 0, false
	}
	var n uint64
	i := 1
	for ; i < len(value) && value[i] >= '0' && value[i] <= '9'; i++ {
		n = n*10 + uint64(value[i]-'0')
	}
	if i == 1 || i == len(value) || value[i] != '-' || n%5 == 0 {
		return 0, false
	}
	return n, true
}

func (g *opGenerator) key() []byte {
	return []byte(fmt.Sprintf("key%05d", g.rng.IntN(g.numKeys)))
}

// boundKey is a seek target or bound: usually a key, sometimes between two
// keys or outside the key space.
func (g *opGenerator) boundKey() []byte {
	switch g.rng.IntN(20) {
	case 0:
		return []byte("a") // before every key
	case 1:
		return []byte("z") // after every key
	case 2, 3:
		return append(g.key(), '!') // between two keys
	}
	return g.key()
}

func (g *opGenerator) value() []byte {
	if g.counters {
		return binary.LittleEndian.AppendUint64(nil, g.rng.Uint64N(1<<20))
	}
	if g.filterValues {
		switch g.rng.IntN(8) {
		case 0:
			return fmt.Appendf(nil, "rm:%d", g.n)
		case 1:
			return fmt.Appendf(nil, "chg:v%d-abc", g.n)
		}
	}
	n := 20 + g.rng.IntN(200)
	if g.rng.IntN(50) == 0 {
		n = 1<<10 + g.rng.IntN(5<<10) // spans blocks at small block sizes
	}
	prefix := fmt.Sprintf("v%d-", g.n)
	v := make([]byte, max(n, len(prefix)))
	copy(v, prefix)
	for j := len(prefix); j < len(v); j++ {
		v[j] = 'a' + byte(g.rng.IntN(26))
	}
	return v
}

// mergeOperand is a Merge's operand: a counter, or a short value (the
// values of a key grow with every merge).
func (g *opGenerator) mergeOperand() []byte {
	if g.counters {
		return g.value()
	}
	return fmt.Appendf(nil, "m%d", g.n)
}

// readSnap picks the snapshot a read uses: sometimes a live one.
func (g *opGenerator) readSnap() int {
	if len(g.liveSnaps) > 0 && g.rng.IntN(3) == 0 {
		return g.liveSnaps[g.rng.IntN(len(g.liveSnaps))]
	}
	return 0
}

func (g *opGenerator) orderedPair() ([]byte, []byte) {
	s, e := g.key(), g.key()
	if bytes.Compare(s, e) > 0 {
		s, e = e, s
	}
	return s, e
}

// markRangeDeleted keeps keys in [s, e) from being single-deleted: a range
// tombstone under a later Put would leave a SingleDelete meeting an older Put.
func (g *opGenerator) markRangeDeleted(s, e []byte) {
	for k := range g.putsSince {
		if k >= string(s) && k < string(e) {
			g.putsSince[k] = 2
		}
	}
}

// next returns the next operation.
func (g *opGenerator) next() modelOp {
	defer func() { g.n++ }()
	rng := g.rng
	sync := rng.IntN(8) == 0
	if g.secondary && rng.IntN(40) == 0 {
		// A range of op numbers: the attributes of values written then.
		lo := uint64(rng.IntN(g.n + 1))
		hi := lo + uint64(rng.IntN(g.n/3+20))
		if rng.IntN(20) == 0 {
			hi = lo // an empty range
		}
		return modelOp{kind: opSecondaryDelete, lo: lo, hi: hi, sync: sync}
	}
	if g.txns && rng.IntN(10) == 0 {
		return g.txnOp(sync)
	}
	if g.merge != nil && rng.IntN(6) == 0 {
		op := modelOp{kind: opMerge, key: g.key(), value: g.mergeOperand(), sync: sync, merge: g.merge}
		g.putsSince[string(op.key)] = 2
		return op
	}
	// --- checkpoints (issue 16, item 1) ---
	if g.checkpoints && rng.IntN(60) == 0 {
		return modelOp{kind: opCheckpoint, checkpointReadWrite: rng.IntN(2) == 0}
	}

	// --- backups (issue 16, item 2) ---
	if g.backups && rng.IntN(80) == 0 {
		return modelOp{kind: opBackupRestore}
	}

	// External SST ingestion.
	if g.ingest && rng.IntN(30) == 0 {
		return g.ingestOp()
	}

	// --- range-over-func scans (issue 19, item 3) ---
	if g.scans && rng.IntN(8) == 0 {
		return g.scanOp()
	}
	// --- read deadlines (issue 19, item 4) ---
	if g.deadlines && rng.IntN(8) == 0 {
		return g.deadlineReadOp()
	}
	for {
		switch r := rng.IntN(100); {
		case r < 30:
			op := modelOp{kind: opPut, key: g.key(), value: g.value(), sync: sync}
			g.putsSince[string(op.key)]++
			return op
		case r < 36:
			op := modelOp{kind: opDelete, key: g.key(), sync: sync}
			g.putsSince[string(op.key)] = 0
			return op
		case r < 40:
			// Look for a key Put exactly once (a few tries keep the
			// sequence deterministic without scanning a map).
			for try := 0; try < 20; try++ {
				if k := g.key(); g.putsSince[string(k)] == 1 {
					g.putsSince[string(k)] = 0
					return modelOp{kind: opSingleDelete, key: k, sync: sync}
				}
			}
		case r < 42:
			s, e := g.orderedPair()
			g.markRangeDeleted(s, e)
			return modelOp{kind: opDeleteRange, key: s, value: e, sync: sync}
		case r < 50:
			op := modelOp{kind: opBatch, sync: sync, merge: g.merge}
			for n := rng.IntN(10); n >= 0; n-- {
				if g.merge != nil && rng.IntN(4) == 0 {
					k := g.key()
					op.batch = append(op.batch, batchEntry{kind: opMerge, key: k, value: g.mergeOperand()})
					g.putsSince[string(k)] = 2
					continue
				}
				switch k := g.key(); rng.IntN(12) {
				case 0, 1, 2:
					op.batch = append(op.batch, batchEntry{kind: opDelete, key: k})
					g.putsSince[string(k)] = 0
				case 3:
					s, e := g.orderedPair()
					op.batch = append(op.batch, batchEntry{kind: opDeleteRange, key: s, value: e})
					g.markRangeDeleted(s, e)
				default:
					op.batch = append(op.batch, batchEntry{kind: opPut, key: k, value: g.value()})
					g.putsSince[string(k)] = 2
				}
			}
			return op
		case r < 68:
			return modelOp{kind: opGet, key: g.key(), snap: g.readSnap()}
		case r < 73:
			op := modelOp{kind: opMultiGet, snap: g.readSnap()}
			for n := 1 + rng.IntN(8); n > 0; n-- {
				op.keys = append(op.keys, g.key())
			}
			return op
		case r < 86:
			return g.iterOp()
		case r < 89:
			g.lastSnap++
			g.liveSnaps = append(g.liveSnaps, g.lastSnap)
			return modelOp{kind: opNewSnapshot, snap: g.lastSnap}
		case r < 92:
			if len(g.liveSnaps) == 0 {
				continue
			}
			j := rng.IntN(len(g.liveSnaps))
			id := g.liveSnaps[j]
			g.liveSnaps = slices.Delete(g.liveSnaps, j, j+1)
			return modelOp{kind: opReleaseSnapshot, snap: id}
		case r < 95:
			return modelOp{kind: opFlush}
		case r < 97:
			op := modelOp{kind: opCompactRange}
			if rng.IntN(2) == 0 {
				op.key, op.value = g.orderedPair()
			}
			return op
		case r < 98:
			if g.repairs && rng.IntN(2) == 0 {
				g.liveSnaps = g.liveSnaps[:0]
				return modelOp{kind: opRepair}
			}
			if rng.IntN(2) == 0 {
				return modelOp{kind: opReadOnlyScan}
			}
			// Snapshots do not survive a reopen.
			g.liveSnaps = g.liveSnaps[:0]
			return modelOp{kind: opReopen}
		default:
			return modelOp{kind: opGet, key: g.key()}
		}
	}
}

// ingestOp returns an opIngest: up to two range deletions and up to 40
// points (puts, deletes and, with a merge operator, merges) of distinct
// keys in increasing order.
func (g *opGenerator) ingestOp() modelOp {
	rng := g.rng
	op := modelOp{kind: opIngest, merge: g.merge, move: rng.IntN(2) == 0}
	for n := rng.IntN(3); n > 0; n-- {
		s, e := g.orderedPair()
		if bytes.Equal(s, e) {
			continue
		}
		op.batch = append(op.batch, batchEntry{kind: opDeleteRange, key: s, value: e})
		g.markRangeDeleted(s, e)
	}
	keys := map[string]bool{}
	for n := rng.IntN(40); n >= 0; n-- {
		keys[string(g.key())] = true
	}
	if len(op.batch) > 0 && rng.IntN(4) == 0 {
		keys = nil // range deletions only
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		e := batchEntry{kind: opPut, key: []byte(k)}
		switch r := rng.IntN(10); {
		case r < 2:
			e.kind = opDelete
			g.putsSince[k] = 0
		case r < 4 && g.merge != nil:
			e.kind, e.value = opMerge, g.mergeOperand()
			g.putsSince[k] = 2
		default:
			e.value = g.value()
			g.putsSince[k] = 2
		}
		op.batch = append(op.batch, e)
	}
	return op
}

func (g *opGenerator) iterOp() modelOp {
	rng := g.rng
	op := modelOp{kind: opIter, snap: g.readSnap()}
	if g.prefixSeeks {
		op.mode = iterMode{prefixSameAsStart: rng.IntN(4) != 0, totalOrderSeek: rng.IntN(8) == 0}
	}
	if rng.IntN(3) == 0 {
		op.lower = g.boundKey()
	}
	if rng.IntN(3) == 0 {
		op.upper = g.boundKey()
	}
	if rng.IntN(4) == 0 {
		// A whole scan in one direction.
		op.steps = []iterStep{{kind: stepScanFwd + iterStepKind(rng.IntN(2))}}
		return op
	}
	for n := 1 + rng.IntN(30); n > 0; n-- {
		s := iterStep{kind: iterStepKind(rng.IntN(int(stepPrev) + 1))}
		if s.kind == stepNext || s.kind == stepPrev {
			// Walks are more common than jumps.
			if rng.IntN(2) == 0 {
				s.kind = stepNext + iterStepKind(rng.IntN(2))
			}
		}
		switch r := rng.IntN(40); {
		case r < 2:
			s = iterStep{kind: stepSetBounds}
			if rng.IntN(2) == 0 {
				s.key = g.boundKey()
			}
			if rng.IntN(2) == 0 {
				s.upper = g.boundKey()
			}
		case r < 3:
			s = iterStep{kind: stepRefresh}
		}
		switch s.kind {
		case stepSeekGE, stepSeekLT, stepSeekForPrev:
			s.key = g.boundKey()
			if g.prefixSeeks && rng.IntN(3) == 0 {
				s.key = g.key()[:modelPrefixLen] // a prefix's first key, or before it
			}
		}
		op.steps = append(op.steps, s)
	}
	return op
}

// kvIterator is what runOp needs of an iterator; *Iterator has it.
type kvIterator interface {
	First() bool
	Last() bool
	Seek(key []byte) bool
	SeekForPrev(key []byte) bool
	SeekLT(key []byte) bool
	SetBounds(lower, upper []byte) error
	Refresh() error
	Next() bool
	Prev() bool
	Valid() bool
	Key() []byte
	Value() []byte
	Close() error
}

// opTarget runs operations: the DB (dbTarget) or the model (modelTarget).
type opTarget interface {
	write(op modelOp) error // opPut, opDelete, opSingleDelete, opDeleteRange, opBatch
	get(key []byte, snap int) ([]byte, error)
	multiGet(keys [][]byte, snap int) ([][]byte, []error)
	newIter(snap int, lower, upper []byte, mode iterMode) kvIterator
	newSnapshot(id int)
	releaseSnapshot(id int)
	flush() error
	compactRange(start, end []byte) error
	reopen() error
	// readOnlyScan returns the digest of a full scan of the database
	// opened read-only (the latest state).
	readOnlyScan() string

	// checkpointScan returns the digest of a full scan of a checkpoint
	// of the database (the latest state), opened read-write or read-only.
	checkpointScan(readWrite bool) string
	// repair closes the database, removes its MANIFEST, repairs it and
	// opens it again (opRepair).
	repair() error

	// --- backups (issue 16, item 2) ---
	// backupRestore returns the digest of a full scan of the database
	// backed up and restored elsewhere (the latest state).
	backupRestore() string
}

// fmtValue renders a value for the log: short ones whole, long ones by
// prefix, length and checksum, so a log line stays short but still tells
// any two values apart.
func fmtValue(v []byte) string {
	if len(v) <= 16 {
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("%q..(%d,%08x)", v[:12], len(v), crc32.ChecksumIEEE(v))
}

// fmtResult renders a read's answer; errors other than ErrNotFound are
// rendered whole, so they differ from the model's answer.
func fmtResult(v []byte, err error) string {
	switch {
	case errors.Is(err, ErrNotFound):
		return "not found"
	case err != nil:
		return "error: " + err.Error()
	}
	return fmtValue(v)
}

func fmtErr(err error) string {
	if err == nil {
		return "ok"
	}
	return "error: " + err.Error()
}

// runOp runs op (the i-th of its sequence) on t and appends to log what
// can be observed of it: the outcome of every write, read, iterator move and
// maintenance call.
func runOp(t opTarget, op modelOp, i int, log []string) []string {
	line := func(format string, args ...any) {
		log = append(log, fmt.Sprintf("op %d: ", i)+fmt.Sprintf(format, args...))
	}
	if d, ok := t.(*dbTarget); ok {
		// Only a failure shows: the model changes no options.
		if err := d.changeOptions(); err != nil {
			line("before the op: %s", fmtErr(err))
		}
	}
	switch op.kind {
	case opPut, opDelete, opSingleDelete, opDeleteRange, opBatch, opSecondaryDelete, opMerge:
		line("%s -> %s", op, fmtErr(t.write(op)))
	case opTxn:
		scan, err := t.(txnTarget).txn(op)
		line("%s -> scan inside:%s -> %s", op, scan, fmtErr(err))
	case opGet:
		v, err := t.get(op.key, op.snap)
		line("get %s snap#%d -> %s", op.key, op.snap, fmtResult(v, err))
	case opMultiGet:
		vals, errs := t.multiGet(op.keys, op.snap)
		var b strings.Builder
		for j, k := range op.keys {
			fmt.Fprintf(&b, " %s=%s", k, fmtResult(vals[j], errs[j]))
		}
		line("multiget snap#%d:%s", op.snap, b.String())
	case opIter:
		it := t.newIter(op.snap, op.lower, op.upper, op.mode)
		lower, upper, snap := op.lower, op.upper, op.snap
		at := func() string {
			if !it.Valid() {
				return "invalid"
			}
			return fmt.Sprintf("%s=%s", it.Key(), fmtValue(it.Value()))
		}
		for _, s := range op.steps {
			name := stepNames[s.kind]
			if s.key != nil {
				name += "(" + string(s.key) + ")"
			}
			switch s.kind {
			case stepFirst:
				it.First()
			case stepLast:
				it.Last()
			case stepSeekGE:
				it.Seek(s.key)
			case stepSeekForPrev:
				it.SeekForPrev(s.key)
			case stepSeekLT:
				it.SeekLT(s.key)
			case stepSetBounds:
				lower, upper = s.key, s.upper
				if s.key != nil && s.upper != nil && bytes.Compare(s.key, s.upper) > 0 {
					lower, upper = s.upper, s.key
				}
				if err := it.SetBounds(lower, upper); err != nil {
					line("iter SetBounds -> %s", fmtErr(err))
				}
			case stepRefresh:
				snap = 0
				if err := it.Refresh(); err != nil {
					line("iter Refresh -> %s", fmtErr(err))
				}
			case stepNext, stepPrev:
				if !it.Valid() {
					continue // undefined on an invalid iterator
				}
				if s.kind == stepNext {
					it.Next()
				} else {
					it.Prev()
				}
			case stepScanFwd, stepScanRev:
				var b strings.Builder
				rev := s.kind == stepScanRev
				ok := it.First()
				if rev {
					ok = it.Last()
				}
				for ok {
					fmt.Fprintf(&b, " %s=%s", it.Key(), fmtValue(it.Value()))
					if rev {
						ok = it.Prev()
					} else {
						ok = it.Next()
					}
				}
				line("iter [%s,%s) snap#%d %s:%s", lower, upper, snap, name, b.String())
				continue
			}
			if s.kind == stepSetBounds || s.kind == stepRefresh {
				line("iter [%s,%s) snap#%d %s -> %v", lower, upper, snap, name, it.Valid())
				continue
			}
			line("iter [%s,%s) snap#%d %s -> %s", lower, upper, snap, name, at())
		}
		line("iter close -> %s", fmtErr(it.Close()))
	case opNewSnapshot:
		t.newSnapshot(op.snap)
	case opReleaseSnapshot:
		t.releaseSnapshot(op.snap)
	case opFlush:
		line("flush -> %s", fmtErr(t.flush()))
	case opCompactRange:
		line("compactrange [%s,%s] -> %s", op.key, op.value, fmtErr(t.compactRange(op.key, op.value)))
	case opReopen:
		line("reopen -> %s", fmtErr(t.reopen()))
	case opReadOnlyScan:
		line("readonly scan -> %s", t.readOnlyScan())
	case opCheckpoint:
		line("checkpoint scan -> %s", t.checkpointScan(op.checkpointReadWrite))
	case opRepair:
		line("repair -> %s", fmtErr(t.repair()))

	// --- backups (issue 16, item 2) ---
	case opBackupRestore:
		line("backup, restore, scan -> %s", t.backupRestore())

	// External SST ingestion.
	case opIngest:
		line("%s -> %s", op, fmtErr(t.write(op)))

	// --- range-over-func scans (issue 19, item 3) ---
	case opScan:
		line("%s ->%s", op, t.(scanTarget).scan(op))
	// --- read deadlines (issue 19, item 4) ---
	case opDeadlineRead:
		line("%s -> %s", op, t.(deadlineReadTarget).readWithin(op))
	}
	return log
}

// modelTarget runs operations on the in-memory model.
type modelTarget struct {
	cur   model
	snaps map[int]model
	// prefix is the DB's Options.PrefixExtractor, which the model's
	// iterators in prefix mode confine to (nil: none).
	prefix SliceTransform
}

func newModelTarget() *modelTarget {
	return &modelTarget{cur: model{}, snaps: map[int]model{}}
}

func (m *modelTarget) write(op modelOp) error {
	apply := func(kind opKind, key, value []byte) {
		switch kind {
		case opMerge:
			var existing []byte
			if v, ok := m.cur[string(key)]; ok {
				existing = []byte(v)
			}
			v, err := op.merge.FullMerge(key, existing, [][]byte{value})
			if err != nil {
				panic(fmt.Sprintf("model: merge of %s: %v", key, err)) // a bad test sequence
			}
			m.cur[string(key)] = string(v)
		case opPut:
			if v, ok := filterCanonical(value); ok {
				m.cur[string(key)] = string(v)
			} else {
				delete(m.cur, string(key))
			}
		case opDelete, opSingleDelete:
			delete(m.cur, string(key))
		case opDeleteRange:
			for k := range m.cur {
				if k >= string(key) && k < string(value) {
					delete(m.cur, k)
				}
			}
		}
	}
	if op.kind == opBatch || op.kind == opIngest {
		// An ingested table's entries share one seqnum: its range
		// deletions come first in its batch and delete only older data.
		for _, e := range op.batch {
			apply(e.kind, e.key, e.value)
		}
		return nil
	}
	if op.kind == opSecondaryDelete {
		// The model holds each key's newest version only: exactly what a
		// secondary tombstone looks at.
		for k, v := range m.cur {
			if a, ok := modelSecondaryKey([]byte(k), []byte(v)); ok && a >= op.lo && a < op.hi {
				delete(m.cur, k)
			}
		}
		return nil
	}
	apply(op.kind, op.key, op.value)
	return nil
}

func (m *modelTarget) state(snap int) model {
	if snap == 0 {
		return m.cur
	}
	return m.snaps[snap]
}

func (m *modelTarget) get(key []byte, snap int) ([]byte, error) {
	v, ok := m.state(snap)[string(key)]
	if !ok {
		return nil, ErrNotFound
	}
	return []byte(v), nil
}

func (m *modelTarget) multiGet(keys [][]byte, snap int) ([][]byte, []error) {
	vals, errs := make([][]byte, len(keys)), make([]error, len(keys))
	for i, k := range keys {
		vals[i], errs[i] = m.get(k, snap)
	}
	return vals, errs
}

func (m *modelTarget) newIter(snap int, lower, upper []byte, mode iterMode) kvIterator {
	s := m.state(snap)
	it := &modelIter{target: m, m: s, keys: s.sortedKeys(lower, upper), lower: lower, upper: upper, pos: -1}
	if mode.prefixSameAsStart && !mode.totalOrderSeek {
		it.prefixTr = m.prefix
	}
	return it
}

func (m *modelTarget) newSnapshot(id int)     { m.snaps[id] = m.cur.clone() }
func (m *modelTarget) releaseSnapshot(id int) { delete(m.snaps, id) }
func (m *modelTarget) flush() error           { return nil }
func (m *modelTarget) compactRange(_, _ []byte) error {
	return nil
}
func (m *modelTarget) reopen() error {
	clear(m.snaps)
	return nil
}

func (m *modelTarget) readOnlyScan() string {
	it := m.newIter(0, nil, nil, iterMode{})
	defer it.Close()
	return scanDigest(it)
}

// checkpointScan is readOnlyScan: a checkpoint holds the latest state.
func (m *modelTarget) checkpointScan(bool) string { return m.readOnlyScan() }

// scanDigest sums up a full forward scan: the count of entries and a
// checksum of their keys and values.
func scanDigest(it kvIterator) string {
	h := crc32.NewIEEE()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Fprintf(h, "%q=%q;", it.Key(), it.Value())
		n++
	}
	return fmt.Sprintf("%d entries, crc %08x", n, h.Sum32())
}

// modelIter iterates over a model's sorted keys within bounds, with the
// DB iterator's semantics (seeks outside the bounds land on the bounds).
//
// In prefix mode (prefixTr set; ReadOptions.PrefixSameAsStart) it knows
// the prefix semantics: a seek to a key with a prefix, and First and Last
// at the key they land on, confine it to that prefix, and it is invalid at
// any key without it; Next and Prev of a confined invalid iterator do not
// move. Other seeks lift the confinement.
type modelIter struct {
	target       *modelTarget
	m            model
	keys         []string
	lower, upper []byte
	pos          int // -1 or len(keys) = invalid
	prefixTr     SliceTransform
	inPrefix     bool
	prefix       []byte
}

func (i *modelIter) inRange() bool { return i.pos >= 0 && i.pos < len(i.keys) }
func (i *modelIter) Valid() bool {
	return i.inRange() && (!i.inPrefix || base.HasPrefix(i.prefixTr, []byte(i.keys[i.pos]), i.prefix))
}

// confineTo confines the iterator to key's prefix in prefix mode, or lifts
// the confinement when key has none.
func (i *modelIter) confineTo(key []byte) {
	i.inPrefix = i.prefixTr != nil && i.prefixTr.InDomain(key)
	if i.inPrefix {
		i.prefix = append([]byte(nil), i.prefixTr.Transform(key)...)
	}
}

func (i *modelIter) First() bool { i.pos = 0; return i.landed() }
func (i *modelIter) Last() bool  { i.pos = len(i.keys) - 1; return i.landed() }

// landed confines the iterator after First or Last to the prefix of the
// key it is at.
func (i *modelIter) landed() bool {
	i.inPrefix = false
	if i.inRange() {
		i.confineTo([]byte(i.keys[i.pos]))
	}
	return i.Valid()
}
func (i *modelIter) Next() bool {
	if i.inPrefix && !i.Valid() {
		return false
	}
	i.pos++
	return i.Valid()
}
func (i *modelIter) Prev() bool {
	if i.inPrefix && !i.Valid() {
		return false
	}
	i.pos--
	return i.Valid()
}
func (i *modelIter) Seek(key []byte) bool {
	i.confineTo(key)
	i.pos, _ = slices.BinarySearch(i.keys, string(key))
	return i.Valid()
}
func (i *modelIter) SeekForPrev(key []byte) bool {
	i.confineTo(key)
	pos, found := slices.BinarySearch(i.keys, string(key))
	if !found {
		pos--
	}
	i.pos = pos
	return i.Valid()
}
func (i *modelIter) SeekLT(key []byte) bool {
	i.confineTo(key)
	pos, _ := slices.BinarySearch(i.keys, string(key))
	i.pos = pos - 1
	return i.Valid()
}
func (i *modelIter) SetBounds(lower, upper []byte) error {
	i.lower, i.upper = lower, upper
	i.keys, i.pos = i.m.sortedKeys(lower, upper), -1
	i.inPrefix = false
	return nil
}
func (i *modelIter) Refresh() error {
	i.m = i.target.state(0)
	return i.SetBounds(i.lower, i.upper)
}
func (i *modelIter) Key() []byte   { return []byte(i.keys[i.pos]) }
func (i *modelIter) Value() []byte { return []byte(i.m[i.keys[i.pos]]) }
func (i *modelIter) Close() error  { return nil }

// dbRunConfig is how a dbTarget writes and reads, beyond its Options.
type dbRunConfig struct {
	sync          syncMode
	disableWAL    bool  // every write skips the WAL
	readaheadSize int64 // ReadOptions.ReadaheadSize of every iterator
	// asyncIO sets ReadOptions.AsyncIO of every read; optimizeMultiGet
	// false sets MultiGetOneLevelAtATime.
	asyncIO, optimizeMultiGet bool
	// secondaryDeletes makes runModelOn generate opSecondaryDelete (the
	// options must set SecondaryDeleteKey to modelSecondaryKey).
	secondaryDeletes bool
	// checkpoints makes runModelOn generate opCheckpoint (issue 16, item
	// 1).
	checkpoints bool
	// setOptions makes the DB change random mutable options with
	// SetOptions before some operations (changeOptions), from a stream
	// of setOptionsSeed's; the operations, and so the model, are the same.
	setOptions     bool
	setOptionsSeed uint64
	// wantBlobIndexes makes runModelOn fail when no table holds a blob
	// index at the end (blob files on, and never turned off).
	wantBlobIndexes bool
	// merge makes runModelOn generate merges under it (the options must
	// set it as MergeOperator); counters makes every value a counter.
	merge    MergeOperator
	counters bool
	// filter says the options set modelFilter as CompactionFilter: the
	// generator writes values it removes or changes, and every read
	// canonicalizes what it returns (filterCanonical), so that it answers
	// the same whether or not a compaction filtered the value yet.
	filter bool
	// prefixSeeks makes runModelOn generate iterators in prefix mode,
	// which the model runs with the options' PrefixExtractor.
	prefixSeeks bool

	// Whole-file checksums (issue 16, item 4).
	// verifyFileChecksums makes every reopen and the final close first
	// check every live file against its recorded checksum
	// (VerifyFileChecksums); a mismatch fails the operation.
	verifyFileChecksums bool

	// txns makes runModelOn generate opTxn (transactions, issue 16 item 5).
	txns bool
	// repairs makes runModelOn generate opRepair.
	repairs bool
	// --- backups (issue 16, item 2) ---
	// backups makes runModelOn generate opBackupRestore.
	backups bool

	// ingest makes runModelOn generate opIngest.
	ingest bool

	// --- range-over-func scans (issue 19, item 3) ---
	// scans makes runModelOn generate opScan.
	scans bool
	// --- read deadlines (issue 19, item 4) ---
	// deadlines makes runModelOn generate opDeadlineRead.
	deadlines bool
}

// syncMode chooses WriteOptions.Sync of a dbTarget's writes.
type syncMode uint8

const (
	syncAsGenerated syncMode = iota
	syncAlways
	syncNever
)

// dbTarget runs operations on a DB.
type dbTarget struct {
	db    *DB
	dir   string
	opts  *Options
	cfg   dbRunConfig
	snaps map[int]*Snapshot
	// flushes and compactions count background work over every reopen.
	flushes, compactions uint64
	// optionsRng draws the changes of cfg.setOptions; optionChanges
	// counts them.
	optionsRng    *rand.Rand
	optionChanges int
	// gets counts reads; every other one goes through AppendValue into
	// getBuf, which it reuses.
	gets   int
	getBuf []byte
	// iterPerf sums the counts of the iterators, with cfg.prefixSeeks.
	iterPerf PerfContext

	// checkpoints counts opCheckpoint runs; it numbers their directories.
	checkpoints int
	// secondary follows the DB from the first opReadOnlyScan on
	// (OpenAsSecondary, in dir+".secondary"), across its reopens; every
	// opReadOnlyScan catches it up and scans it too.
	secondary *DB

	// --- backups (issue 16, item 2) ---
	// backups is the engine of opBackupRestore (opened at its first use,
	// on the DB's FS in dir+".backups"); backupsMade counts its backups.
	backups     *BackupEngine
	backupsMade int

	// ingests numbers the external tables of opIngest.
	ingests int
}

// appendValuePrefix is what dbTarget.get puts in the buffer it hands
// AppendValue, which must keep it.
var appendValuePrefix = []byte("dst-prefix:")

func openDBTarget(dir string, opts *Options, cfg dbRunConfig) (*dbTarget, error) {
	db, err := Open(dir, opts)
	if err != nil {
		return nil, err
	}
	d := &dbTarget{db: db, dir: dir, opts: opts, cfg: cfg, snaps: map[int]*Snapshot{}}
	if cfg.setOptions {
		d.optionsRng = rand.New(rand.NewPCG(cfg.setOptionsSeed, 0x5e7095))
	}
	return d, nil
}

// changeOptions, with cfg.setOptions, changes a few random mutable options
// of the DB before one operation in 30. The values keep the tables small,
// so that flushes and compactions still run often.
func (d *dbTarget) changeOptions() error {
	r := d.optionsRng
	if r == nil || r.IntN(30) != 0 {
		return nil
	}
	one := func() map[string]string {
		i := func(lo, hi int) string { return fmt.Sprint(lo + r.IntN(hi-lo+1)) }
		switch r.IntN(20) {
		case 0:
			// Off less often than on, so L0 does not grow for long.
			return map[string]string{"disable_auto_compactions": fmt.Sprint(r.IntN(3) == 0)}
		case 1:
			return map[string]string{"write_buffer_size": i(4<<10, 64<<10)}
		case 2:
			return map[string]string{"max_write_buffer_number": i(2, 4)}
		case 3:
			trigger := 1 + r.IntN(4)
			slowdown := trigger + r.IntN(6)
			return map[string]string{
				"level0_file_num_compaction_trigger": fmt.Sprint(trigger),
				"level0_slowdown_writes_trigger":     fmt.Sprint(slowdown),
				"level0_stop_writes_trigger":         fmt.Sprint(slowdown + r.IntN(6)),
			}
		case 4:
			return map[string]string{"target_file_size_base": i(4<<10, 32<<10), "target_file_size_multiplier": i(1, 4)}
		case 5:
			return map[string]string{"max_bytes_for_level_base": i(16<<10, 128<<10), "max_bytes_for_level_multiplier": i(2, 10)}
		case 6:
			return map[string]string{"max_background_jobs": i(1, 4)}
		case 7:
			return map[string]string{"compression": []string{"none", "snappy", "zstd"}[r.IntN(3)]}
		case 8:
			return map[string]string{"block_size": fmt.Sprint(1024 << r.IntN(3)), "block_restart_interval": i(1, 32)}
		case 9:
			return map[string]string{"bloom_bits_per_key": i(-1, 14)}
		case 10:
			return map[string]string{"bytes_per_sync": i(0, 64<<10)}
		case 11:
			return map[string]string{"tombstone_dense_compaction_threshold": fmt.Sprint(r.Float64()),
				"num_deletions_threshold": i(-1, 100), "deletion_size_ratio_threshold": fmt.Sprint(r.Float64())}
		case 12:
			return map[string]string{"disable_delete_aware_compaction": fmt.Sprint(r.IntN(2) == 0)}
		case 13:
			return map[string]string{"max_sequential_skip_in_iterations": i(0, 8)}
		case 14:
			return map[string]string{"memtable_op_scan_flush_trigger": i(0, 20)}
		case 15:
			// Blob files turned on and off, so tables hold inline values,
			// blob indexes, or both.
			return map[string]string{"enable_blob_files": fmt.Sprint(r.IntN(2) == 0), "min_blob_size": i(0, 200),
				"enable_blob_write_separation": fmt.Sprint(r.IntN(2) == 0)}
		case 16:
			return map[string]string{"blob_file_size": i(1<<10, 16<<10), "blob_file_starting_level": i(0, 2),
				"blob_compression_type": []string{"none", "snappy", "zstd"}[r.IntN(3)], "prepopulate_blob_cache": fmt.Sprint(r.IntN(2) == 0)}
		case 17:
			// Blob garbage collection on and off, relocating more or fewer
			// files, forced or not, inside or outside its window.
			return map[string]string{"enable_blob_garbage_collection": fmt.Sprint(r.IntN(3) != 0),
				"blob_garbage_collection_age_cutoff":      []string{"0.25", "0.5", "1"}[r.IntN(3)],
				"blob_garbage_collection_force_threshold": []string{"0.2", "0.5", "1"}[r.IntN(3)],
				"blob_garbage_collection_off_peak_window": []string{"", "00:00-23:59", "03:00-03:01"}[r.IntN(3)],
				"blob_compaction_readahead_size":          []string{"-1", "0", "4096"}[r.IntN(3)]}
		case 18:
			// Filters with and without whole keys, memtables with and
			// without prefix blooms (with a prefix extractor; else
			// nothing changes).
			return map[string]string{"whole_key_filtering": fmt.Sprint(r.IntN(2) == 0),
				"memtable_prefix_bloom_size_ratio": []string{"0", "0.01", "0.2"}[r.IntN(3)]}
		default:
			return map[string]string{"delete_persistence_threshold": []string{"0s", "30ms"}[r.IntN(2)]}
		}
	}
	change := one()
	for n := r.IntN(3); n > 0; n-- {
		for k, v := range one() {
			change[k] = v
		}
	}
	if err := d.db.SetOptions(change); err != nil {
		return fmt.Errorf("SetOptions(%v): %w", change, err)
	}
	d.optionChanges++
	return nil
}

func (d *dbTarget) writeOptions(op modelOp) *WriteOptions {
	wo := &WriteOptions{Sync: op.sync, DisableWAL: d.cfg.disableWAL}
	switch d.cfg.sync {
	case syncAlways:
		wo.Sync = true
	case syncNever:
		wo.Sync = false
	}
	return wo
}

func (d *dbTarget) write(op modelOp) error {
	wo := d.writeOptions(op)
	switch op.kind {
	case opPut:
		return d.db.Put(op.key, op.value, wo)
	case opDelete:
		return d.db.Delete(op.key, wo)
	case opSingleDelete:
		return d.db.SingleDelete(op.key, wo)
	case opDeleteRange:
		return d.db.DeleteRange(op.key, op.value, wo)
	case opSecondaryDelete:
		return d.db.DeleteBySecondaryRange(op.lo, op.hi, wo)
	case opMerge:
		return d.db.Merge(op.key, op.value, wo)

	// External SST ingestion.
	case opIngest:
		return d.ingest(op)
	}
	b := d.db.NewBatch()
	for _, e := range op.batch {
		switch e.kind {
		case opMerge:
			b.Merge(e.key, e.value)
		case opPut:
			b.Put(e.key, e.value)
		case opDelete:
			b.Delete(e.key)
		case opDeleteRange:
			b.DeleteRange(e.key, e.value)
		}
	}
	return d.db.Write(b, wo)
}

func (d *dbTarget) readOptions(snap int) *ReadOptions {
	if snap == 0 && !d.cfg.asyncIO {
		return nil
	}
	ro := &ReadOptions{AsyncIO: d.cfg.asyncIO, MultiGetOneLevelAtATime: !d.cfg.optimizeMultiGet}
	if snap != 0 {
		ro.Snapshot = d.snaps[snap]
	}
	return ro
}

func (d *dbTarget) get(key []byte, snap int) ([]byte, error) {
	v, err := d.getValue(key, snap)
	if d.cfg.filter && err == nil {
		return filterCanonicalResult(v)
	}
	if err == nil && d.gets%3 == 0 {
		// KeyMayExist must never rule out a key Get finds, and a value it
		// finds in a memtable is Get's.
		if may, mv, found := d.db.KeyMayExist(key, d.readOptions(snap)); !may || found && !bytes.Equal(mv, v) {
			return nil, fmt.Errorf("KeyMayExist(%q) = %v, %q, %v; Get found %q", key, may, mv, found, v)
		}
	}
	return v, err
}

// getValue reads key by Get or, every other read, by AppendValue.
func (d *dbTarget) getValue(key []byte, snap int) ([]byte, error) {
	d.gets++
	if d.gets%2 == 0 {
		return d.db.Get(key, d.readOptions(snap))
	}
	buf, err := d.db.AppendValue(append(d.getBuf[:0], appendValuePrefix...), key, d.readOptions(snap))
	d.getBuf = buf
	switch {
	case !bytes.HasPrefix(buf, appendValuePrefix):
		return nil, fmt.Errorf("AppendValue(%q) returned %q: dst's bytes are lost", appendValuePrefix, buf)
	case err != nil && len(buf) != len(appendValuePrefix):
		return nil, fmt.Errorf("AppendValue returned %q with error %w: dst changed", buf, err)
	case err != nil:
		return nil, err
	}
	// A copy: getBuf is overwritten by the next read.
	return append([]byte{}, buf[len(appendValuePrefix):]...), nil
}

func (d *dbTarget) multiGet(keys [][]byte, snap int) ([][]byte, []error) {
	vals, errs := d.db.MultiGet(keys, d.readOptions(snap))
	if d.cfg.filter {
		for i := range vals {
			if errs[i] == nil {
				vals[i], errs[i] = filterCanonicalResult(vals[i])
			}
		}
	}
	return vals, errs
}

func (d *dbTarget) newIter(snap int, lower, upper []byte, mode iterMode) kvIterator {
	ro := &ReadOptions{LowerBound: lower, UpperBound: upper, ReadaheadSize: d.cfg.readaheadSize,
		AsyncIO: d.cfg.asyncIO, MultiGetOneLevelAtATime: !d.cfg.optimizeMultiGet,
		PrefixSameAsStart: mode.prefixSameAsStart, TotalOrderSeek: mode.totalOrderSeek}
	if snap != 0 {
		ro.Snapshot = d.snaps[snap]
	}
	if d.cfg.prefixSeeks {
		ro.PerfContext = &d.iterPerf
	}
	if d.cfg.filter {
		return &canonicalIter{Iterator: d.db.NewIterator(ro)}
	}
	return d.db.NewIterator(ro)
}

func (d *dbTarget) newSnapshot(id int) { d.snaps[id] = d.db.NewSnapshot() }

func (d *dbTarget) releaseSnapshot(id int) {
	d.snaps[id].Release()
	delete(d.snaps, id)
}

func (d *dbTarget) flush() error { return d.db.Flush() }

func (d *dbTarget) compactRange(start, end []byte) error { return d.db.CompactRange(start, end) }

func (d *dbTarget) countWork() {
	m := d.db.Metrics()
	d.flushes += m.Flush.Count
	d.compactions += m.Compact.Count + m.Compact.TrivialMoves
}

func (d *dbTarget) reopen() error {
	for id, s := range d.snaps {
		s.Release()
		delete(d.snaps, id)
	}
	d.countWork()
	if d.cfg.setOptions {
		// Reopen with what SetOptions changed, as a program that loads
		// the latest options does.
		o := d.db.GetOptions()
		d.opts = &o
	}
	if err := d.verifyFileChecksums(); err != nil {
		return err
	}
	if err := d.db.Close(); err != nil {
		return err
	}
	db, err := Open(d.dir, d.opts)
	if err != nil {
		// Later operations fail with ErrClosed on the old handle.
		return err
	}
	d.db = db
	return nil
}

// readOnlyScan opens the directory with OpenForReadOnly while d.db stays
// open for writing. A read-only open sees what reached the WAL or a table,
// so writes that skipped the WAL or are still in the background WAL
// writer's hands are flushed first.
func (d *dbTarget) readOnlyScan() string {
	if d.cfg.disableWAL || d.opts.WALBackgroundWrites {
		if err := d.db.Flush(); err != nil {
			return "flush: " + fmtErr(err)
		}
	}
	ro := *d.opts
	ro.Logger = nil
	db, err := OpenForReadOnly(d.dir, &ro)
	if err != nil {
		return "open: " + fmtErr(err)
	}
	digest := d.scanDigestOf(db)
	if err := db.Close(); err != nil {
		digest += " close: " + fmtErr(err)
	}
	// The secondary instance, caught up, must show the same state: the
	// log then differs from the model's if it does not.
	if d.secondary == nil {
		if d.secondary, err = OpenAsSecondary(d.dir, d.dir+".secondary", &ro); err != nil {
			return digest + " secondary open: " + fmtErr(err)
		}
	}
	if err := d.secondary.TryCatchUpWithPrimary(); err != nil {
		return digest + " secondary catch-up: " + fmtErr(err)
	}
	if sd := d.scanDigestOf(d.secondary); sd != digest {
		digest += " secondary: " + sd
	}
	return digest
}

// scanDigestOf is the scanDigest of a full scan of db.
func (d *dbTarget) scanDigestOf(db *DB) string {
	var it kvIterator = db.NewIterator(nil)
	if d.cfg.filter {
		it = &canonicalIter{Iterator: it.(*Iterator)}
	}
	digest := scanDigest(it)
	if err := it.Close(); err != nil {
		digest += " iter close: " + fmtErr(err)
	}
	return digest
}

// checkpointScan takes a checkpoint of d.db into a fresh directory, opens
// it (read-write: with the DB's options; read-only: as readOnlyScan opens),
// scans it, and removes it.
func (d *dbTarget) checkpointScan(readWrite bool) string {
	d.checkpoints++
	dir := fmt.Sprintf("%s-checkpoint-%d", d.dir, d.checkpoints)
	fs := d.opts.FS
	defer fs.RemoveAll(dir)
	if err := d.db.Checkpoint(dir); err != nil {
		return "checkpoint: " + fmtErr(err)
	}
	o := *d.opts
	o.Logger, o.CreateIfMissing = nil, false
	// What counts the source DB's work stays the source's alone.
	o.Statistics, o.EventListener, o.Lock = nil, nil, nil
	open := OpenForReadOnly
	if readWrite {
		open = Open
	}
	db, err := open(dir, &o)
	if err != nil {
		return "open: " + fmtErr(err)
	}
	var it kvIterator = db.NewIterator(d.readOptions(0))
	if d.cfg.filter {
		it = &canonicalIter{Iterator: it.(*Iterator)}
	}
	digest := scanDigest(it)
	if err := it.Close(); err != nil {
		digest += " iter close: " + fmtErr(err)
	}
	if err := db.Close(); err != nil {
		digest += " close: " + fmtErr(err)
	}
	return digest
}

// close releases the snapshots and closes the DB.
func (d *dbTarget) close() error {
	for id, s := range d.snaps {
		s.Release()
		delete(d.snaps, id)
	}
	if d.backups != nil {
		_ = d.backups.Close()
		d.backups = nil
	}
	var err error
	if d.secondary != nil {
		err = d.secondary.Close()
		d.secondary = nil
	}
	if cerr := d.verifyFileChecksums(); cerr != nil {
		d.db.Close()
		return errors.Join(err, cerr)
	}
	return errors.Join(err, d.db.Close())
}

// verifyFileChecksums runs VerifyFileChecksums when the configuration asks
// for it (dbRunConfig.verifyFileChecksums).
func (d *dbTarget) verifyFileChecksums() error {
	if !d.cfg.verifyFileChecksums {
		return nil
	}
	if err := d.db.VerifyFileChecksums(); err != nil {
		return fmt.Errorf("VerifyFileChecksums: %w", err)
	}
	return nil
}

// modelFilter is the compaction filter of the model tests: it removes the
// values that start with "rm:" and upper-cases the rest of those that
// start with "chg:", which filterCanonical does to every value read.
type modelFilter struct{}

func (modelFilter) Name() string { return "shale.test.model-filter" }

func (modelFilter) Filter(_ int, _ []byte, vt CompactionFilterValueType, value func() ([]byte, error)) (CompactionFilterDecision, []byte, []byte) {
	if vt != ValueTypeValue {
		return DecisionKeep, nil, nil
	}
	v, err := value()
	if err != nil {
		return DecisionKeep, nil, nil
	}
	c, ok := filterCanonical(v)
	switch {
	case !ok:
		return DecisionRemove, nil, nil
	case !bytes.Equal(c, v):
		return DecisionChangeValue, c, nil
	}
	return DecisionKeep, nil, nil
}

// filterCanonical returns what modelFilter makes of v: ok false when it
// removes it.
func filterCanonical(v []byte) ([]byte, bool) {
	switch {
	case bytes.HasPrefix(v, []byte("rm:")):
		return nil, false
	case bytes.HasPrefix(v, []byte("chg:")):
		return append([]byte("chg:"), bytes.ToUpper(v[len("chg:"):])...), true
	}
	return v, true
}

// filterCanonicalResult is filterCanonical as a read's answer.
func filterCanonicalResult(v []byte) ([]byte, error) {
	if c, ok := filterCanonical(v); ok {
		return c, nil
	}
	return nil, ErrNotFound
}

// canonicalIter shows an iterator's data as filterCanonical makes it:
// removed values' keys are stepped over in the direction of the move.
type canonicalIter struct {
	*Iterator
	value []byte
}

func (i *canonicalIter) settle(ok, forward bool) bool {
	for ok {
		if c, keep := filterCanonical(i.Iterator.Value()); keep {
			i.value = c
			return true
		}
		if forward {
			ok = i.Iterator.Next()
		} else {
			ok = i.Iterator.Prev()
		}
	}
	return false
}

func (i *canonicalIter) First() bool { return i.settle(i.Iterator.First(), true) }
func (i *canonicalIter) Last() bool  { return i.settle(i.Iterator.Last(), false) }
func (i *canonicalIter) Next() bool  { return i.settle(i.Iterator.Next(), true) }
func (i *canonicalIter) Prev() bool  { return i.settle(i.Iterator.Prev(), false) }
func (i *canonicalIter) Seek(k []byte) bool {
	return i.settle(i.Iterator.Seek(k), true)
}
func (i *canonicalIter) SeekForPrev(k []byte) bool {
	return i.settle(i.Iterator.SeekForPrev(k), false)
}
func (i *canonicalIter) SeekLT(k []byte) bool {
	return i.settle(i.Iterator.SeekLT(k), false)
}
func (i *canonicalIter) Value() []byte { return i.value }

// Transactions (issue 16, item 5).

// txnOp returns an opTxn: the entries of a batch (puts, deletes, range
// deletes and, with a merge operator, merges).
func (g *opGenerator) txnOp(sync bool) modelOp {
	rng := g.rng
	op := modelOp{kind: opTxn, sync: sync, merge: g.merge}
	for n := rng.IntN(10); n >= 0; n-- {
		k := g.key()
		switch r := rng.IntN(12); {
		case g.merge != nil && r < 3:
			op.batch = append(op.batch, batchEntry{kind: opMerge, key: k, value: g.mergeOperand()})
		case r < 6:
			op.batch = append(op.batch, batchEntry{kind: opDelete, key: k})
			g.putsSince[string(k)] = 0
			continue
		case r == 6:
			s, e := g.orderedPair()
			op.batch = append(op.batch, batchEntry{kind: opDeleteRange, key: s, value: e})
			g.markRangeDeleted(s, e)
			continue
		default:
			op.batch = append(op.batch, batchEntry{kind: opPut, key: k, value: g.value()})
		}
		g.putsSince[string(k)] = 2
	}
	return op
}

// txnTarget runs opTxn: it returns what the transaction's iterator showed
// before the commit, and the commit's error.
type txnTarget interface {
	txn(op modelOp) (scan string, err error)
}

func (m *modelTarget) txn(op modelOp) (string, error) {
	b := op
	b.kind = opBatch
	inside := &modelTarget{cur: m.cur.clone(), snaps: map[int]model{}}
	if err := inside.write(b); err != nil {
		return "", err
	}
	var out strings.Builder
	for _, k := range inside.cur.sortedKeys(nil, nil) {
		fmt.Fprintf(&out, " %s=%s", k, fmtValue([]byte(inside.cur[k])))
	}
	return out.String(), m.write(b)
}

func (d *dbTarget) txn(op modelOp) (string, error) {
	txn := d.db.BeginOptimisticTransaction(d.writeOptions(op), nil)
	for _, e := range op.batch {
		var err error
		switch e.kind {
		case opMerge:
			err = txn.Merge(e.key, e.value)
		case opPut:
			err = txn.Put(e.key, e.value)
		case opDelete:
			err = txn.Delete(e.key)
		case opDeleteRange:
			err = txn.DeleteRange(e.key, e.value)
		}
		if err != nil {
			txn.Rollback()
			return "", err
		}
	}
	it := txn.NewIterator(d.readOptions(0))
	var out strings.Builder
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Fprintf(&out, " %s=%s", it.Key(), fmtValue(it.Value()))
	}
	if err := it.Close(); err != nil {
		txn.Rollback()
		return out.String(), err
	}
	return out.String(), txn.Commit()
}

// RepairDB (issue 17, item 1).

func (m *modelTarget) repair() error {
	clear(m.snaps)
	return nil
}

// repair closes the DB, removes the MANIFEST CURRENT names, runs Repair
// and opens the database again. A repair that loses anything but the
// removed MANIFEST fails the op.
func (d *dbTarget) repair() error {
	for id, s := range d.snaps {
		s.Release()
		delete(d.snaps, id)
	}
	d.countWork()
	if err := d.db.Close(); err != nil {
		return err
	}
	fs := d.opts.FS
	cur, err := fs.Open(fs.PathJoin(d.dir, "CURRENT"))
	if err != nil {
		return err
	}
	b := make([]byte, 64)
	n, _ := cur.ReadAt(b, 0)
	cur.Close()
	if err := fs.Remove(fs.PathJoin(d.dir, strings.TrimSpace(string(b[:n])))); err != nil {
		return err
	}
	rep, err := Repair(d.dir, d.opts)
	if err != nil {
		return err
	}
	if len(rep.Lost) != 0 || len(rep.WALLosses) != 0 {
		return fmt.Errorf("repair lost data:\n%s", rep)
	}
	db, err := Open(d.dir, d.opts)
	if err != nil {
		return err
	}
	d.db = db
	return nil
}

// --- backups (issue 16, item 2) ---

func (m *modelTarget) backupRestore() string { return m.readOnlyScan() }

// backupRestore backs the DB up (every other backup after a flush), keeps
// the newest three backups, restores the newest over the previous restore
// in dir+".restored" and scans it. Writes that only the WAL writer's
// background hands hold, or that skipped the WAL, are flushed first, as
// for readOnlyScan.
func (d *dbTarget) backupRestore() string {
	fs := d.opts.FS
	if d.backups == nil {
		e, err := OpenBackupEngine(d.dir+".backups", &BackupOptions{FS: fs})
		if err != nil {
			return "open engine: " + fmtErr(err)
		}
		d.backups = e
	}
	d.backupsMade++
	flush := d.backupsMade%2 == 0 || d.cfg.disableWAL || d.opts.WALBackgroundWrites
	if err := d.backups.CreateNewBackupFlush(d.db, flush); err != nil {
		return "backup: " + fmtErr(err)
	}
	if err := d.backups.PurgeOldBackups(3); err != nil {
		return "purge: " + fmtErr(err)
	}
	restored := d.dir + ".restored"
	if err := d.backups.RestoreDBFromLatestBackup(restored); err != nil {
		return "restore: " + fmtErr(err)
	}
	o := *d.opts
	o.Logger, o.EventListener, o.CreateIfMissing, o.Lock = nil, nil, false, nil
	db, err := Open(restored, &o)
	if err != nil {
		return "open restored: " + fmtErr(err)
	}
	var it kvIterator = db.NewIterator(nil)
	if d.cfg.filter {
		it = &canonicalIter{Iterator: it.(*Iterator)}
	}
	digest := scanDigest(it)
	if err := it.Close(); err != nil {
		digest += " iter close: " + fmtErr(err)
	}
	if err := db.Close(); err != nil {
		digest += " close: " + fmtErr(err)
	}
	return digest
}

// External SST ingestion (ingest.go).

// ingest writes op's batch to an external table (with the database's
// options: its table format, blob files, merge operator) in a directory
// inside the database's, whose name the database ignores, and ingests it.
func (d *dbTarget) ingest(op modelOp) error {
	fs := d.opts.FS
	dir := fs.PathJoin(d.dir, "external")
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	d.ingests++
	path := fs.PathJoin(dir, fmt.Sprintf("%06d.sst", d.ingests))
	w := NewSSTFileWriter(d.opts)
	if err := w.Open(path); err != nil {
		return err
	}
	for _, e := range op.batch {
		var err error
		switch e.kind {
		case opPut:
			err = w.Put(e.key, e.value)
		case opDelete:
			err = w.Delete(e.key)
		case opMerge:
			err = w.Merge(e.key, e.value)
		case opDeleteRange:
			err = w.DeleteRange(e.key, e.value)
		}
		if err != nil {
			w.Abandon()
			return err
		}
	}
	if err := w.Finish(); err != nil {
		return err
	}
	if err := d.db.IngestExternalFile([]string{path}, &IngestExternalFileOptions{MoveFiles: op.move}); err != nil {
		return err
	}
	if !op.move {
		// The copy is the database's; the source may go.
		for _, p := range append([]string{path}, w.Info().BlobFiles...) {
			if err := fs.Remove(p); err != nil {
				return err
			}
		}
	}
	return nil
}
