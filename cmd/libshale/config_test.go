package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/shaledb/shale"
)

// TestOptionsCompressionCodes checks that RocksDB's compression numbers map
// to shale's compressions, and that the ones shale does not write fail with
// an error naming the setter.
func TestOptionsCompressionCodes(t *testing.T) {
	for code, want := range map[int]shale.Compression{
		compressionNone:   shale.NoCompression,
		compressionSnappy: shale.SnappyCompression,
		compressionZstd:   shale.ZstdCompression,
	} {
		o := newDBOptions()
		o.compression = code
		opts, err := o.options()
		if err != nil {
			t.Fatalf("compression %d: %v", code, err)
		}
		if opts.Compression != want {
			t.Errorf("compression %d: got %v, want %v", code, opts.Compression, want)
		}
	}
	for _, code := range []int{compressionZlib, compressionBZip2, compressionLZ4, compressionLZ4HC, compressionXpress, -1, 99} {
		o := newDBOptions()
		o.compression = code
		_, err := o.options()
		if !errors.Is(err, errInvalidArgument) || !strings.Contains(err.Error(), "shale_options_set_compression") {
			t.Errorf("compression %d: got %v, want an invalid argument naming the setter", code, err)
		}
	}
}

// TestOptionsDefaultsAreRocksDBs checks what shale_options_create gives:
// create_if_missing off, Snappy, and shale's defaults for everything else.
func TestOptionsDefaultsAreRocksDBs(t *testing.T) {
	opts, err := newDBOptions().options()
	if err != nil {
		t.Fatal(err)
	}
	if opts.CreateIfMissing || opts.Compression != shale.SnappyCompression || opts.BloomBitsPerKey != 0 || opts.BlockCacheSize != 0 {
		t.Errorf("defaults: %+v", opts)
	}
	ro := newReadOptions()
	if ro.ro.AsyncIO || ro.ro.SkipFillCache || !ro.ro.OptimizeMultiGetForIO {
		t.Errorf("read option defaults: %+v", ro.ro)
	}
}

// TestOptionsZeroMeansRocksDBsZero checks the setters whose zero means
// "none" in RocksDB while shale.Options' zero means the default.
func TestOptionsZeroMeansRocksDBsZero(t *testing.T) {
	o := newDBOptions()
	o.setBloomBitsPerKey(0)
	o.setBlockCacheSize(0)
	if o.opts.BloomBitsPerKey >= 0 || o.opts.BlockCacheSize >= 0 {
		t.Errorf("0 bits / 0 cache: got BloomBitsPerKey %d, BlockCacheSize %d, want both negative (off)", o.opts.BloomBitsPerKey, o.opts.BlockCacheSize)
	}
	o.setBloomBitsPerKey(12)
	o.setBlockCacheSize(1 << 20)
	if o.opts.BloomBitsPerKey != 12 || o.opts.BlockCacheSize != 1<<20 {
		t.Errorf("got BloomBitsPerKey %d, BlockCacheSize %d", o.opts.BloomBitsPerKey, o.opts.BlockCacheSize)
	}
	o.setBlockCacheSize(^uint64(0))
	if o.opts.BlockCacheSize != 1<<63-1 {
		t.Errorf("a size_t past int64: got %d", o.opts.BlockCacheSize)
	}
}

// TestReadOptionsFillCache checks both ways of fill_cache.
func TestReadOptionsFillCache(t *testing.T) {
	r := newReadOptions()
	r.setFillCache(false)
	if !r.ro.SkipFillCache || r.ro.FillCache {
		t.Errorf("fill_cache 0: %+v", r.ro)
	}
	r.setFillCache(true)
	if r.ro.SkipFillCache || !r.ro.FillCache {
		t.Errorf("fill_cache 1: %+v", r.ro)
	}
}

// TestReadOptionsBoundIsCopied checks that a bound does not alias the
// caller's buffer (C may free it), and that NULL clears it.
func TestReadOptionsBoundIsCopied(t *testing.T) {
	var bound []byte
	buf := []byte("key5")
	setBound(&bound, buf, false)
	buf[0] = 'X'
	if string(bound) != "key5" {
		t.Errorf("bound changed with the caller's buffer: %q", bound)
	}
	setBound(&bound, []byte{}, false)
	if bound == nil || len(bound) != 0 {
		t.Errorf("an empty bound: got %v, want empty non-nil", bound)
	}
	setBound(&bound, nil, true)
	if bound != nil {
		t.Errorf("NULL bound: got %q, want nil", bound)
	}
}
