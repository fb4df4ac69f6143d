package compact

import (
	"math"
	"slices"
	"sort"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
)

const numLevelsMax = manifest.NumLevelsMax

// The values of Compaction.Reason.
const (
	ReasonL0     = "L0"     // L0 score >= 1 (file count or bytes)
	ReasonSize   = "size"   // level size over its target
	ReasonMarked = "marked" // a file marked for compaction by a property collector
	ReasonManual = "manual" // PickManual
	// ReasonTombstoneDensity: a file whose data blocks are dense in
	// tombstones (Options.TombstoneDenseCompactionThreshold).
	ReasonTombstoneDensity = "tombstone-density"
	// ReasonElisionOnly: a last-level file rewritten in place to drop the
	// tombstones it holds and what they delete.
	ReasonElisionOnly = "elision-only"
	// ReasonExpired (fade.go): a file past its delete persistence deadline.
	// ReasonBlobExpired (fade.go): a table referencing a blob file past
	// its delete persistence deadline.

	// ReasonSecondaryDelete: a file that may hold entries a live secondary
	// tombstone deletes (manifest.FileMetadata.MayHoldDeletedBy), no
	// snapshot keeping them.
	ReasonSecondaryDelete = "secondary-delete"
)

// forDeletes reports whether reason is one of the reasons a compaction is
// picked for the tombstones of a file.
func forDeletes(reason string) bool {
	return reason == ReasonMarked || reason == ReasonTombstoneDensity || reason == ReasonElisionOnly ||
		reason == ReasonSecondaryDelete
}

// Compaction is one picked compaction: input files from Level and OutputLevel,
// written into OutputLevel. The caller sets Compacting on every input.
type Compaction struct {
	Level, OutputLevel int
	// Inputs[0] are the files from Level, Inputs[1] those from OutputLevel
	// (empty when Level == OutputLevel, a bottom-level rewrite).
	Inputs [2][]*manifest.FileMetadata
	// Grandparents are the files of OutputLevel+1 overlapping the inputs;
	// outputs are cut to bound their overlap with them.
	Grandparents []*manifest.FileMetadata
	// Score is the score of Level when picked.
	Score float64
	// Reason is one of the Reason* constants.
	Reason string
	// MaxOutputFileSize is the target size of the output files.
	MaxOutputFileSize uint64
	// Smallest and Largest bound the user keys of all inputs (inclusive; a
	// Largest taken from a range-delete sentinel makes the bound loose).
	Smallest, Largest []byte
	// secondary is set when an input may hold entries a live secondary
	// tombstone deletes: moving it would keep them, so it is rewritten.
	secondary bool
}

// IsTrivialMove reports whether the compaction can move its single input
// file to OutputLevel without rewriting it.
func (c *Compaction) IsTrivialMove() bool {
	// L0 inputs are the closure of overlapping L0 files (see pickL0), so a
	// single L0 input has no other L0 file overlapping it.
	if c.Level == c.OutputLevel || len(c.Inputs[0]) != 1 || len(c.Inputs[1]) != 0 ||
		forDeletes(c.Reason) || c.Reason == ReasonBlobGC || c.Reason == ReasonBlobExpired || c.Reason == ReasonPeriodic || c.secondary {
		return false
	}
	limit := mulSat(c.MaxOutputFileSize, 10)
	var overlap uint64
	for _, f := range c.Grandparents {
		overlap += f.Size
		if overlap > limit {
			return false
		}
	}
	return true
}

// userRange is a range of user keys, inclusive unless endExclusive (its end
// came from a range-delete sentinel). An unbounded side has its flag set (an
// empty or nil slice is a valid user key, so flags, not nils).
type userRange struct {
	start, end     []byte
	endExclusive   bool
	noStart, noEnd bool
}

func fileOverlaps(cmp base.Compare, f *manifest.FileMetadata, r userRange) bool {
	if !r.noEnd {
		if c := cmp(f.Smallest.UserKey, r.end); c > 0 || (c == 0 && r.endExclusive) {
			return false
		}
	}
	if r.noStart {
		return true
	}
	c := cmp(f.Largest.UserKey, r.start)
	if f.Largest.IsExclusiveSentinel() {
		return c > 0
	}
	return c >= 0
}

// extend widens r to cover f and reports whether it grew.
func (r *userRange) extend(cmp base.Compare, f *manifest.FileMetadata) bool {
	grown := false
	if !r.noStart && cmp(f.Smallest.UserKey, r.start) < 0 {
		r.start, grown = f.Smallest.UserKey, true
	}
	if !r.noEnd {
		excl := f.Largest.IsExclusiveSentinel()
		if c := cmp(f.Largest.UserKey, r.end); c > 0 || (c == 0 && r.endExclusive && !excl) {
			r.end, r.endExclusive, grown = f.Largest.UserKey, excl, true
		}
	}
	return grown
}

// rangeOf returns r extended by files; without extend, r is replaced by the
// range of files, which must be non-empty.
func rangeOf(cmp base.Compare, r userRange, files []*manifest.FileMetadata, extend bool) userRange {
	if !extend {
		f := files[0]
		r = userRange{start: f.Smallest.UserKey, end: f.Largest.UserKey, endExclusive: f.Largest.IsExclusiveSentinel()}
	}
	for _, f := range files {
		r.extend(cmp, f)
	}
	return r
}

func levelFiles(v *manifest.Version, level int) []*manifest.FileMetadata {
	if level < 0 || level >= len(v.Levels) {
		return nil
	}
	return v.Levels[level]
}

func totalSize(files []*manifest.FileMetadata) (n uint64) {
	for _, f := range files {
		n += f.Size
	}
	return n
}

func anyCompacting(files []*manifest.FileMetadata) bool {
	for _, f := range files {
		if f.Compacting {
			return true
		}
	}
	return false
}

// overlapping returns the files of level overlapping r. In L0 it returns the
// transitive closure: files overlapping r, extended by files overlapping
// those, in the level's (newest first) order. In L1+ it returns a clean cut:
// since neighbours may share a boundary user key, r is widened until no file
// straddles its ends.
func overlapping(cmp base.Compare, v *manifest.Version, level int, r userRange) []*manifest.FileMetadata {
	files := levelFiles(v, level)
	var out []*manifest.FileMetadata
	for {
		out = out[:0]
		grown := false
		for _, f := range files {
			if !fileOverlaps(cmp, f, r) {
				continue
			}
			out = append(out, f)
			if r.extend(cmp, f) {
				grown = true
			}
		}
		if !grown {
			return out
		}
	}
}

// TargetSizes returns the base level (where L0 compacts into) and the target
// size of every level. targets[0] is MaxBytesForLevelBase (L0 is scored by
// it); a level kept empty, and in the dynamic mode with no data the whole
// tree, has target math.MaxUint64.
//
// With DynamicLevelBytes this is RocksDB's algorithm: the largest level keeps
// its actual size; each level above gets the one below divided by the
// multiplier, up to the first level whose target is at most
// MaxBytesForLevelBase, which becomes the base level (never below the first
// non-empty level); a backlogged L0 raises the base target and flattens the
// multiplier; no target is below MaxBytesForLevelBase.
func TargetSizes(v *manifest.Version, o *Options) (baseLevel int, targets []uint64) {
	opts := *o
	opts.EnsureDefaults()
	return targetSizes(v, &opts)
}

func targetSizes(v *manifest.Version, o *Options) (int, []uint64) {
	n := o.NumLevels
	targets := make([]uint64, n)
	targets[0] = o.MaxBytesForLevelBase
	mult := o.MaxBytesForLevelMultiplier
	if !o.DynamicLevelBytes {
		t := o.MaxBytesForLevelBase
		for l := 1; l < n; l++ {
			targets[l] = t
			t = mulSat(t, mult)
		}
		return 1, targets
	}
	for l := 1; l < n; l++ {
		targets[l] = math.MaxUint64
	}
	var maxSize uint64
	firstNonEmpty := -1
	for l := 1; l < n; l++ {
		s := totalSize(levelFiles(v, l))
		if s > 0 && firstNonEmpty < 0 {
			firstNonEmpty = l
		}
		maxSize = max(maxSize, s)
	}
	if maxSize == 0 {
		// Nothing below L0: L0 compacts straight into the last level.
		return n - 1, targets
	}
	baseMax := o.MaxBytesForLevelBase
	baseMin := uint64(float64(baseMax) / mult)
	// The size the first non-empty level would have if the largest level
	// were the last one and every level above were 1/mult of the next.
	cur := maxSize
	for l := n - 2; l >= firstNonEmpty; l-- {
		cur = uint64(float64(cur) / mult)
	}
	baseLevel := firstNonEmpty
	var baseSize uint64
	if cur <= baseMin {
		// More levels hold data than the size needs; the multiplier cannot
		// be kept, keep the existing base level.
		baseSize = baseMin + 1
	} else {
		for baseLevel > 1 && cur > baseMax {
			baseLevel--
			cur = uint64(float64(cur) / mult)
		}
		baseSize = max(1, min(cur, baseMax))
	}
	levelMult := mult
	l0 := levelFiles(v, 0)
	if l0Size := totalSize(l0); l0Size > baseSize &&
		(l0Size > baseMax || len(l0)/2 >= o.L0CompactionTrigger) {
		// L0 is backlogged: size the base level like L0 so that L0->base is
		// not starved by scores below, and spread the rest evenly.
		baseSize = l0Size
		if baseLevel == n-1 {
			levelMult = 1
		} else {
			levelMult = math.Pow(float64(maxSize)/float64(baseSize), 1/float64(n-baseLevel-1))
		}
	}
	size := baseSize
	for l := baseLevel; l < n; l++ {
		if l > baseLevel {
			size = mulSat(size, levelMult)
		}
		// A target below the base size would make L1+ look fuller than L0
		// and starve L0 compactions (an hourglass-shaped tree).
		targets[l] = max(size, baseMax)
	}
	return baseLevel, targets
}

// Scores returns the compaction score of every level: L0's is the largest of
// (files not being compacted)/L0CompactionTrigger, their bytes over
// MaxBytesForLevelBase and their blob score (l0BlobScore); Ln's is its bytes not being compacted over its
// target. The bytes are compensated for tombstones (each file counts its
// size plus what its tombstones are estimated to delete) unless
// DisableDeleteAware is set; level targets use the real sizes. The last
// level is never a size-compaction source and scores 0.
func Scores(v *manifest.Version, o *Options) []float64 {
	p := NewPicker(*o)
	baseLevel, targets := targetSizes(v, &p.opts)
	a := averagesOf(v)
	return p.scores(v, baseLevel, targets, &a)
}

func (p *Picker) scores(v *manifest.Version, baseLevel int, targets []uint64, a *entryAverages) []float64 {
	o := &p.opts
	s := make([]float64, o.NumLevels)
	for l := 0; l < o.NumLevels-1; l++ {
		var size uint64
		var count int
		for _, f := range levelFiles(v, l) {
			if !f.Compacting {
				size += p.compensatedSize(f, a)
				count++
			}
		}
		if l == 0 {
			s[0] = max(float64(count)/float64(o.L0CompactionTrigger),
				float64(size)/float64(o.MaxBytesForLevelBase), l0BlobScore(v, baseLevel))
		} else if targets[l] != math.MaxUint64 {
			s[l] = float64(size) / float64(targets[l])
		}
	}
	return s
}

// Picker picks automatic compactions. It remembers, per level, where the
// last size compaction of that level ended, so that successive compactions
// sweep the key space round-robin (RocksDB's compact cursor). It is used with
// the DB mutex held, like the versions it reads.
type Picker struct {
	opts Options
	// cursor[l] is the largest user key of the last inputs picked from l.
	cursor [][]byte
	// lastForDeletes is set when the last pick was for tombstones (or a
	// forced blob GC), so that the next pick, when both kinds wait, is by
	// score (see PickAuto).
	lastForDeletes bool
	// blobGCNext is set when the last of those was for tombstones, so that
	// a forced blob GC goes next when both wait (pickBackground).
	blobGCNext bool
}

// pickBackground chooses between a compaction for tombstones and a forced
// blob GC compaction, either of which may be nil: the one whose turn it is
// when both wait. It reports whether the choice is the one for tombstones.
func (p *Picker) pickBackground(forDel, blobGC *Compaction) (*Compaction, bool) {
	switch {
	case blobGC == nil:
		return forDel, forDel != nil
	case forDel == nil || p.blobGCNext:
		return blobGC, false
	}
	return forDel, true
}

// NewPicker returns a Picker for o (zero fields take their defaults).
func NewPicker(o Options) *Picker {
	o.EnsureDefaults()
	return &Picker{opts: o, cursor: make([][]byte, o.NumLevels)}
}

// SetOptions replaces the options later picks use (the DB's SetOptions),
// keeping the per-level cursors. NumLevels and Comparer must not change.
func (p *Picker) SetOptions(o Options) {
	o.EnsureDefaults()
	if o.NumLevels != p.opts.NumLevels {
		panic("compact: Picker.SetOptions cannot change NumLevels")
	}
	p.opts = o
}

// Options returns the options the Picker picks with, defaults filled in.
func (p *Picker) Options() Options { return p.opts }

// PickAuto picks with a fresh Picker: see (*Picker).PickAuto.
func PickAuto(v *manifest.Version, o *Options, env PickEnv) *Compaction {
	return NewPicker(*o).PickAuto(v, env)
}

// PickAuto returns the next automatic compaction, or nil when there is
// nothing to do. Two kinds of compaction compete:
//
//   - by score: the highest-scoring level with score >= 1 whose inputs are
//     not already being compacted;
//   - for tombstones (pickForDeletes): a file marked for compaction by a
//     property collector, a tombstone-dense file, or a last-level file whose
//     tombstones can all be dropped; or, taking turns with those, a forced
//     blob GC (pickForcedBlobGC): a table referencing an old blob file dense
//     in garbage.
//
// A compaction for tombstones goes first when the level of its file scores
// below 1: that level needs no size compaction, so nothing else would
// rewrite the file soon. When its level scores 1 or more, the two kinds
// alternate, so that neither starves the other. An L0 compaction by score
// always goes first once L0 holds L0SlowdownWritesTrigger files: delete
// work never makes writes wait. (RocksDB and Pebble pick files for
// tombstones only when no level needs a compaction by score.)
//
// Before either, a file past its delete persistence deadline is compacted,
// or a table referencing a blob file past its deadline (pickExpired, with
// Options.DeletePersistenceThreshold).
func (p *Picker) PickAuto(v *manifest.Version, env PickEnv) *Compaction {
	o := &p.opts
	baseLevel, targets := targetSizes(v, o)
	a := averagesOf(v)
	sc := p.scores(v, baseLevel, targets, &a)
	if c := p.pickExpired(v, env, baseLevel, sc); c != nil {
		return c
	}
	bySize := p.pickByScore(v, baseLevel, sc)
	forDel := p.pickForDeletes(v, env, baseLevel)
	// A forced blob GC compaction competes as one for tombstones does; when
	// both wait they take turns, so neither starves the other.
	forDel, deletes := p.pickBackground(forDel, p.pickForcedBlobGC(v, baseLevel, env))
	if forDel != nil {
		forDel.Score = sc[forDel.Level]
	}
	var c *Compaction
	switch {
	case forDel == nil:
		c = bySize
	case bySize == nil:
		c = forDel
	case bySize.Level == 0 && o.L0SlowdownWritesTrigger > 0 && len(levelFiles(v, 0)) >= o.L0SlowdownWritesTrigger:
		c = bySize
	case forDel.Score < 1:
		c = forDel
	case p.lastForDeletes:
		c = bySize
	default:
		c = forDel
	}
	if c == nil {
		// Nothing by size or for tombstones: TTL and periodic work.
		return p.pickAged(v, baseLevel)
	}
	p.lastForDeletes = c == forDel
	if c == forDel {
		p.blobGCNext = deletes
	}
	if c == bySize && c.Level > 0 {
		p.cursor[c.Level] = append(p.cursor[c.Level][:0], c.inputs0Largest(o.Comparer.Compare)...)
	}
	return c
}

// NeedsCompaction reports whether PickAuto would pick a compaction, without
// changing the Picker's state (RocksDB's NeedsCompaction).
func (p *Picker) NeedsCompaction(v *manifest.Version, env PickEnv) bool {
	saved := Picker{opts: p.opts, lastForDeletes: p.lastForDeletes, blobGCNext: p.blobGCNext, cursor: make([][]byte, len(p.cursor))}
	for i, c := range p.cursor {
		saved.cursor[i] = slices.Clone(c)
	}
	c := p.PickAuto(v, env)
	*p = saved
	return c != nil
}

// pickByScore returns the compaction of the highest-scoring level with
// score >= 1 whose inputs are not already being compacted, or nil.
func (p *Picker) pickByScore(v *manifest.Version, baseLevel int, sc []float64) *Compaction {
	o := &p.opts
	order := make([]int, 0, o.NumLevels)
	for l := 0; l < o.NumLevels-1; l++ {
		if sc[l] >= 1 {
			order = append(order, l)
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return sc[order[i]] > sc[order[j]] })
	for _, l := range order {
		var c *Compaction
		if l == 0 {
			c = p.pickL0(v, baseLevel, nil, ReasonL0)
		} else {
			c = p.pickLevel(v, l, baseLevel)
		}
		if c != nil {
			c.Score = sc[l]
			return c
		}
	}
	return nil
}

// pickFile returns the compaction of file f of level for reason, or nil
// when it would conflict with one running: an L0 file into the base level
// (with the L0 files overlapping it, pickL0), a file of the bottom level
// rewritten in place, any other into the next level.
func (p *Picker) pickFile(v *manifest.Version, level, bottom, baseLevel int, f *manifest.FileMetadata, reason string) *Compaction {
	switch {
	case level == 0:
		return p.pickL0(v, baseLevel, f, reason)
	case level == bottom:
		return p.setup(v, level, level, baseLevel, []*manifest.FileMetadata{f}, reason)
	}
	return p.setup(v, level, level+1, baseLevel, []*manifest.FileMetadata{f}, reason)
}

// pickL0 compacts the L0 files overlapping seed (the oldest file when nil),
// transitively, into the base level. Nothing is picked while any L0 file is
// compacting: a second L0 compaction could move newer data below older data.
func (p *Picker) pickL0(v *manifest.Version, baseLevel int, seed *manifest.FileMetadata, reason string) *Compaction {
	l0 := levelFiles(v, 0)
	if len(l0) == 0 || anyCompacting(l0) {
		return nil
	}
	if seed == nil {
		seed = l0[len(l0)-1]
	}
	return p.setup(v, 0, baseLevel, baseLevel, []*manifest.FileMetadata{seed}, reason)
}

// pickLevel picks one file of level (starting after the level's cursor,
// wrapping around) whose compaction does not conflict with running ones, and
// compacts it into the next level. PickAuto moves the cursor when it takes
// the compaction.
func (p *Picker) pickLevel(v *manifest.Version, level, baseLevel int) *Compaction {
	files := levelFiles(v, level)
	if len(files) == 0 || level < baseLevel {
		return nil
	}
	cmp := p.opts.Comparer.Compare
	start := 0
	if cur := p.cursor[level]; cur != nil {
		start = sort.Search(len(files), func(i int) bool {
			return cmp(files[i].Smallest.UserKey, cur) > 0
		})
	}
	out := min(level+1, p.opts.NumLevels-1)
	for k := range files {
		f := files[(start+k)%len(files)]
		if f.Compacting {
			continue
		}
		if c := p.setup(v, level, out, baseLevel, []*manifest.FileMetadata{f}, ReasonSize); c != nil {
			return c
		}
	}
	return nil
}

func (c *Compaction) inputs0Largest(cmp base.Compare) []byte {
	return rangeOf(cmp, userRange{}, c.Inputs[0], false).end
}

// setup builds a compaction from seed files of level: it widens them to a
// clean cut (the closure in L0), adds the overlapping files of out, then
// widens the level's inputs once more to the range of everything when that
// adds no output-level file and stays under MaxCompactionBytes. It returns nil
// when any needed file is being compacted.
func (p *Picker) setup(v *manifest.Version, level, out, baseLevel int, seed []*manifest.FileMetadata, reason string) *Compaction {
	cmp := p.opts.Comparer.Compare
	o := &p.opts
	inputs0 := overlapping(cmp, v, level, rangeOf(cmp, userRange{}, seed, false))
	if len(inputs0) == 0 || anyCompacting(inputs0) {
		return nil
	}
	r := rangeOf(cmp, userRange{}, inputs0, false)
	var inputs1 []*manifest.FileMetadata
	if out != level {
		inputs1 = overlapping(cmp, v, out, r)
		if anyCompacting(inputs1) {
			return nil
		}
		if len(inputs1) > 0 {
			all := rangeOf(cmp, r, inputs1, true)
			exp0 := overlapping(cmp, v, level, all)
			if len(exp0) > len(inputs0) && !anyCompacting(exp0) &&
				totalSize(exp0)+totalSize(inputs1) < o.MaxCompactionBytes {
				exp1 := overlapping(cmp, v, out, rangeOf(cmp, userRange{}, exp0, false))
				if len(exp1) == len(inputs1) {
					inputs0 = exp0
					r = rangeOf(cmp, userRange{}, inputs0, false)
				}
			}
		}
	}
	c := &Compaction{
		Level:             level,
		OutputLevel:       out,
		Inputs:            [2][]*manifest.FileMetadata{inputs0, inputs1},
		Reason:            reason,
		MaxOutputFileSize: o.targetFileSize(out, baseLevel),
	}
	if len(inputs1) > 0 {
		r = rangeOf(cmp, r, inputs1, true)
	}
	c.Smallest, c.Largest = r.start, r.end
	for _, t := range v.SecondaryTombstones {
		for _, f := range inputs0 {
			c.secondary = c.secondary || f.MayHoldDeletedBy(t)
		}
	}
	if out != level && out+1 < o.NumLevels {
		c.Grandparents = overlapping(cmp, v, out+1, r)
	}
	return c
}

// PickManual returns a compaction of the files of level overlapping
// [start, end] (nil = unbounded) into the next level: L0 into the base
// level, the last level into itself. It returns nil when no file overlaps or
// when a needed file is being compacted; the caller retries the latter once
// running compactions finish. Inputs are not bounded by MaxCompactionBytes.
func PickManual(v *manifest.Version, o *Options, level int, start, end []byte) *Compaction {
	p := NewPicker(*o)
	if level < 0 || level >= p.opts.NumLevels {
		return nil
	}
	cmp := p.opts.Comparer.Compare
	baseLevel, _ := targetSizes(v, &p.opts)
	r := userRange{start: start, end: end, noStart: start == nil, noEnd: end == nil}
	seed := overlapping(cmp, v, level, r)
	if len(seed) == 0 {
		return nil
	}
	out := min(level+1, p.opts.NumLevels-1)
	if level == 0 {
		out = baseLevel
	}
	return p.setup(v, level, out, baseLevel, seed, ReasonManual)
}
