package shale

import (
	"fmt"
	"testing"
)

// optionVariants are option sets the model test runs under: the same random
// operations must give the same answers whatever the block size, restart
// interval, compression, filters, buffer sizes, level shape or job count.
var optionVariants = []struct {
	name string
	set  func(*Options)
}{
	{"restart1-block1k", func(o *Options) { o.BlockRestartInterval = 1 }},
	{"zstd-nofilter", func(o *Options) { o.Compression = ZstdCompression; o.BloomBitsPerKey = -1 }},
	{"nocompression-nocache", func(o *Options) { o.Compression = NoCompression; o.BlockCacheSize = -1 }},
	{"static-levels", func(o *Options) { o.DisableDynamicLevelBytes = true; o.NumLevels = 3 }},
	{"many-jobs", func(o *Options) { o.MaxBackgroundJobs = 6; o.MaxWriteBufferNumber = 4 }},
	{"large-buffers", func(o *Options) { o.WriteBufferSize = 1 << 20; o.TargetFileSizeBase = 64 << 10 }},
	{"no-auto-compactions", func(o *Options) { o.DisableAutoCompactions = true }},
	{"big-blocks", func(o *Options) { o.BlockSize = 64 << 10; o.BlockRestartInterval = 128 }},
}

// TestModelOptionVariants is the metamorphic side of the model test.
func TestModelOptionVariants(t *testing.T) {
	ops := bySize(1500, 600, 8000)
	for _, v := range optionVariants {
		seed := modelSeed(t)
		t.Run(fmt.Sprintf("%s/%d", v.name, seed), func(t *testing.T) {
			t.Logf("seed %d (rerun with SHALE_SEED=%d -run 'TestModelOptionVariants/%s')", seed, seed, v.name)
			runModel(t, seed, ops, v.set)
		})
	}
}
