package main

import (
	"errors"
	"fmt"

	"github.com/shaledb/shale"
)

// The compression codes of shale_options_set_compression: RocksDB's numbers
// (rocksdb_no_compression, rocksdb_snappy_compression, ...), of which shale
// writes none, Snappy and Zstandard.
const (
	compressionNone   = 0
	compressionSnappy = 1
	compressionZlib   = 2
	compressionBZip2  = 3
	compressionLZ4    = 4
	compressionLZ4HC  = 5
	compressionXpress = 6
	compressionZstd   = 7
)

// compressionNames names RocksDB's codes for error messages.
var compressionNames = map[int]string{
	compressionNone: "none", compressionSnappy: "snappy", compressionZlib: "zlib",
	compressionBZip2: "bzip2", compressionLZ4: "lz4", compressionLZ4HC: "lz4hc",
	compressionXpress: "xpress", compressionZstd: "zstd",
}

// errInvalidArgument marks the errors of bad arguments given by C callers
// (NULL handles, NULL keys with a length, unsupported option values).
var errInvalidArgument = errors.New("shale: invalid argument")

// invalidArg returns an error wrapping errInvalidArgument.
func invalidArg(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errInvalidArgument, fmt.Sprintf(format, args...))
}

// dbOptions is what a shale_options_t holds: the Options being built, and
// the values whose setters cannot report an error (they return void, as in
// RocksDB), checked when shale_open uses them.
type dbOptions struct {
	opts        shale.Options
	compression int
}

// newDBOptions returns RocksDB's defaults: create_if_missing false (as the
// zero Options), Snappy compression.
func newDBOptions() *dbOptions {
	return &dbOptions{compression: compressionSnappy}
}

// setBloomBitsPerKey follows RocksDB's rocksdb_filterpolicy_create_bloom:
// fewer than one bit per key means no filter, where shale.Options' zero
// means the default 10 bits.
func (o *dbOptions) setBloomBitsPerKey(bits int) {
	if bits <= 0 {
		bits = -1
	}
	o.opts.BloomBitsPerKey = bits
}

// setBlockCacheSize follows RocksDB's rocksdb_cache_create_lru(0): a cache of
// no capacity caches nothing, where shale.Options' zero means 32 MiB.
func (o *dbOptions) setBlockCacheSize(n uint64) {
	if n == 0 {
		o.opts.BlockCacheSize = -1
		return
	}
	o.opts.BlockCacheSize = clampInt64(n)
}

// options returns the Options shale_open opens with, or an error naming the
// setter whose value shale cannot honour.
func (o *dbOptions) options() (*shale.Options, error) {
	opts := o.opts
	switch o.compression {
	case compressionNone:
		opts.Compression = shale.NoCompression
	case compressionSnappy:
		opts.Compression = shale.SnappyCompression
	case compressionZstd:
		opts.Compression = shale.ZstdCompression
	default:
		name, ok := compressionNames[o.compression]
		if !ok {
			name = "unknown"
		}
		return nil, invalidArg("shale_options_set_compression: compression type %d (%s) is not supported; use 0 (none), 1 (snappy) or 7 (zstd)", o.compression, name)
	}
	return &opts, nil
}

// readOptions is what a shale_readoptions_t holds. The bounds are copies of
// the caller's bytes: C may free its buffers as soon as the setter returns.
type readOptions struct {
	ro shale.ReadOptions
}

// newReadOptions returns RocksDB's ReadOptions defaults (fill_cache true,
// async_io false, optimize_multiget_for_io true).
func newReadOptions() *readOptions {
	return &readOptions{ro: *shale.NewReadOptions()}
}

// setFillCache sets RocksDB's fill_cache: shale keeps it as SkipFillCache,
// whose zero value is RocksDB's default.
func (r *readOptions) setFillCache(fill bool) {
	r.ro.FillCache = fill
	r.ro.SkipFillCache = !fill
}

// setBound copies a bound given by C: a NULL key clears it.
func setBound(dst *[]byte, key []byte, isNull bool) {
	if isNull {
		*dst = nil
		return
	}
	*dst = append(make([]byte, 0, len(key)), key...)
}

// clampInt64 converts a C size to an int64, saturating (a size_t can exceed
// what an int64 holds).
func clampInt64(n uint64) int64 {
	if n > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(n)
}

// clampInt converts a C size to an int, saturating.
func clampInt(n uint64) int {
	const maxInt = int(^uint(0) >> 1)
	if n > uint64(maxInt) {
		return maxInt
	}
	return int(n)
}

// panicError turns a recovered panic into the error returned through errptr.
func panicError(r any) error {
	return fmt.Errorf("shale: a panic in the C API call was recovered (an invalid or destroyed handle, or a bug to report): %v", r)
}
