package shale

import "testing"

// reseekSets are option sets that differ only in when iterators seek past
// a run of versions of one key (MaxSequentialSkipInIterations), from at
// the first to never within a run, on in-memory and small-table shapes.
var reseekSets = []metaOptionSet{
	{name: "max-skip-default", set: func(o *Options) {}},
	{name: "max-skip-0", set: func(o *Options) { o.MaxSequentialSkipInIterations = -1 }},
	{name: "max-skip-1", set: func(o *Options) { o.MaxSequentialSkipInIterations = 1 }},
	{name: "max-skip-2", set: func(o *Options) { o.MaxSequentialSkipInIterations = 2 }},
	{name: "max-skip-never", set: func(o *Options) { o.MaxSequentialSkipInIterations = 1 << 30 }},
	{name: "max-skip-0-tiny-tables", set: func(o *Options) {
		o.MaxSequentialSkipInIterations = -1
		o.WriteBufferSize = 4 << 10
		o.TargetFileSizeBase = 4 << 10
	}},
	{name: "max-skip-1-no-auto-compactions", set: func(o *Options) {
		// Versions pile up in L0 tables.
		o.MaxSequentialSkipInIterations = 1
		o.DisableAutoCompactions = true
	}},
}

// TestMetamorphicReseeks is TestMetamorphic over a key space of a dozen
// keys, so that every key collects long runs of versions, tombstones and
// snapshots between them, run under reseekSets: seeking past versions
// instead of stepping through them must never change an answer. A failure's
// rerun line names TestMetamorphic; rerun this test with
// SHALE_SEED=<seed> go test -run 'TestMetamorphicReseeks/<seed>/<set>$'.
func TestMetamorphicReseeks(t *testing.T) {
	n := bySize(1500, 600, 6000)
	forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
		runMetamorphicOnKeys(t, seed, n, 12, reseekSets)
	})
}

// runMetamorphicOnKeys is runMetamorphic with ops drawn from numKeys keys.
func runMetamorphicOnKeys(t *testing.T, seed uint64, n, numKeys int, sets []metaOptionSet) {
	runMetamorphicOps(t, seed, generateOps(seed, n, numKeys), sets)
}
