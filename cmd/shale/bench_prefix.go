package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/benchdata"
)

// Prefix seeks (issue 15, item 3): db_bench's --prefix_size and
// --keys_per_prefix, its prefix read options (--prefix_same_as_start,
// --total_order_seek, --memtable_bloom_size_ratio) and the prefixscan
// workload.
//
// As in db_bench, --prefix_size N gives the database the fixed prefix
// extractor of N bytes (Options.PrefixExtractor, NewFixedPrefixTransform),
// and --keys_per_prefix K > 0 makes key number v start with the prefix
// number v mod (--num / K), so that the keys of a prefix are spread over
// the key space (and over the write order of fillseq). db_bench writes both
// numbers big-endian in binary; shale's keys stay zero-padded decimal: the
// prefix number in the first N bytes, v in the rest.

// formatKey writes key number k into dst (--key_size bytes): zero-padded
// decimal, after its prefix with --keys_per_prefix.
func (c *benchConfig) formatKey(dst []byte, k int64) {
	if n := c.numPrefixes(); n > 0 {
		benchdata.FormatKey(dst[:c.prefixSize], k%n)
		benchdata.FormatKey(dst[c.prefixSize:], k)
		return
	}
	benchdata.FormatKey(dst, k)
}

// numPrefixes is the number of key prefixes with --keys_per_prefix (at
// least 1), 0 without.
func (c *benchConfig) numPrefixes() int64 {
	if c.keysPerPrefix <= 0 || c.prefixSize <= 0 {
		return 0
	}
	return max(c.num/c.keysPerPrefix, 1)
}

// validatePrefixFlags checks the prefix flags (validate calls it).
func (c *benchConfig) validatePrefixFlags() error {
	switch {
	case c.prefixSize < 0:
		return fmt.Errorf("--prefix_size must be >= 0 (0: no prefix extractor), got %d", c.prefixSize)
	case c.keysPerPrefix < 0:
		return fmt.Errorf("--keys_per_prefix must be >= 0 (0: keys are plain numbers), got %d", c.keysPerPrefix)
	case c.keysPerPrefix > 0 && c.prefixSize == 0:
		return errors.New("--keys_per_prefix needs --prefix_size: the prefix is the first --prefix_size bytes of a key")
	case c.prefixSize > c.keySize || c.keysPerPrefix > 0 && c.prefixSize >= c.keySize:
		return fmt.Errorf("--prefix_size %d must be below --key_size %d", c.prefixSize, c.keySize)
	case !(c.memtableBloomSizeRatio >= 0) || math.IsInf(c.memtableBloomSizeRatio, 0):
		return fmt.Errorf("--memtable_bloom_size_ratio must be >= 0 (0: none), got %g", c.memtableBloomSizeRatio)
	}
	if c.seekMissingPrefix && c.numPrefixes() == 0 {
		return errors.New("--seek_missing_prefix needs --keys_per_prefix: the missing prefixes are numbered prefixes with a non-digit last byte")
	}
	if n := c.numPrefixes(); n > 0 {
		if len(fmt.Sprint(n-1)) > c.prefixSize {
			return fmt.Errorf("--prefix_size %d is too small for the %d decimal prefixes of --num %d / --keys_per_prefix %d", c.prefixSize, n, c.num, c.keysPerPrefix)
		}
		if len(fmt.Sprint(c.num-1)) > c.keySize-c.prefixSize {
			return fmt.Errorf("--key_size %d leaves %d bytes after --prefix_size %d, too few for the decimal keys of --num %d", c.keySize, c.keySize-c.prefixSize, c.prefixSize, c.num)
		}
	}
	return nil
}

// setPrefixOptions sets the Options of the prefix flags.
func (c *benchConfig) setPrefixOptions(o *shale.Options) {
	if c.prefixSize > 0 {
		o.PrefixExtractor = shale.NewFixedPrefixTransform(c.prefixSize)
	}
	o.MemtablePrefixBloomSizeRatio = c.memtableBloomSizeRatio
	o.DisableWholeKeyFiltering = !c.wholeKeyFiltering
}

// benchPrefixScan is prefixscan: each op seeks to a random prefix (its own
// bytes, which sort before its keys) with ReadOptions.PrefixSameAsStart and
// reads every key of it, until the iterator is invalid. With
// --total_order_seek the iterator reads in total order and the scan stops at
// the first key of another prefix itself: the same keys, without prefix
// filters. The prefix is drawn from the prefixes of --keys_per_prefix, or
// is the first --prefix_size bytes of a random key; with
// --seek_missing_prefix (and --keys_per_prefix) it is one no key has: a
// prefix number ending in ':' instead of its last digit, which sorts
// between two written prefixes. found counts the scans that found a key;
// --seek_nexts > 0 bounds the keys read per scan.
func benchPrefixScan(r *benchRunner, t *benchThread) error {
	c := &r.cfg
	if c.prefixSize <= 0 {
		return errors.New("prefixscan needs --prefix_size")
	}
	ro := *r.ro
	ro.PrefixSameAsStart = true
	it := r.db.NewIterator(&ro)
	prefix := make([]byte, c.prefixSize)
	var err error
	for i := int64(0); t.more(i, c.reads, true); i++ {
		if n := c.numPrefixes(); n > 0 {
			benchdata.FormatKey(prefix, t.rng.Int64N(n))
			if c.seekMissingPrefix {
				// A byte no decimal key has: the prefix sorts between
				// those of two written ones, so every seek lands amid
				// the tables' keys.
				prefix[len(prefix)-1] = ':'
			}
		} else {
			copy(prefix, t.randomKey())
		}
		t.reads++
		var moved, keys int64
		for ok := it.Seek(prefix); ok && bytes.HasPrefix(it.Key(), prefix); ok = it.Next() {
			keys++
			moved += int64(len(it.Key()) + len(it.Value()))
			if c.seekNexts > 0 && keys >= int64(c.seekNexts) {
				break
			}
		}
		if keys > 0 {
			t.found++
		}
		if err = it.Err(); err != nil {
			break
		}
		t.finished(1, moved)
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return err
}
