package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/shaledb/shale"
)

// What the tool prints on stderr speaks of the flags and directories the
// user typed, not of the library's API; the library's messages are reworded
// here, in one place.

// cliMessage renders err for stderr with one "shale: " prefix, however many
// of the wrapped errors started with their own (the library's all do, so
// "opening X: shale: ..." would otherwise print as "shale: opening X:
// shale: ..."). errNotFound prints bare, as the get verb promises.
func cliMessage(err error) string {
	msg := err.Error()
	if err == errNotFound {
		return msg
	}
	msg = strings.TrimPrefix(msg, "shale: ")
	msg = strings.ReplaceAll(msg, ": shale: ", ": ")
	msg = strings.ReplaceAll(msg, "\nshale: ", "\n")
	return "shale: " + msg
}

// flagError rewords err so that the Options fields in its message read as
// the flags that set them: flags maps a field name (BlockSize) to its flag
// (--block_size). The message names a field as "Options.BlockSize" or, for
// compound names, bare ("... must be >= Level0FileNumCompactionTrigger").
// errors.Is and errors.As still see err.
func flagError(err error, flags map[string]string) error {
	if err == nil || len(flags) == 0 {
		return err
	}
	msg := err.Error()
	reworded := optionNamesRE(flags).ReplaceAllStringFunc(msg, func(m string) string {
		field := strings.TrimPrefix(m, "Options.")
		if field == m && !compoundName(field) {
			return m // a plain word such as "Compression", not a field name
		}
		return flags[field]
	})
	if reworded == msg {
		return err
	}
	return &cliError{msg: reworded, err: err}
}

// optionNamesRE matches the fields of flags, with or without "Options.".
func optionNamesRE(flags map[string]string) *regexp.Regexp {
	names := slices.SortedFunc(maps.Keys(flags), func(a, b string) int {
		return cmp.Compare(len(b), len(a)) // longest first
	})
	for i, n := range names {
		names[i] = regexp.QuoteMeta(n)
	}
	return regexp.MustCompile(`\b(?:Options\.)?(?:` + strings.Join(names, "|") + `)\b`)
}

// compoundName reports whether name has more than one capital letter, so
// that its bare form cannot be an ordinary word.
func compoundName(name string) bool {
	n := 0
	for _, r := range name {
		if unicode.IsUpper(r) {
			n++
		}
	}
	return n > 1
}

// cliError is an error reworded for the command line.
type cliError struct {
	msg string
	err error
}

func (e *cliError) Error() string { return e.msg }
func (e *cliError) Unwrap() error { return e.err }

// adminOptionFlags names the flags of the admin verbs' Options fields.
var adminOptionFlags = map[string]string{
	"CreateIfMissing": "--create_if_missing",
}

// benchOptionFlags names the bench flags of the Options fields they set.
// Flags db_bench spells differently from the field (--bloom_bits,
// --cache_size, --compression_type) are why this is a table.
var benchOptionFlags = map[string]string{
	// A fresh run creates the database; --use_existing_db does not.
	"CreateIfMissing":                  "--use_existing_db=false",
	"WriteBufferSize":                  "--write_buffer_size",
	"MaxWriteBufferNumber":             "--max_write_buffer_number",
	"Level0FileNumCompactionTrigger":   "--level0_file_num_compaction_trigger",
	"Level0SlowdownWritesTrigger":      "--level0_slowdown_writes_trigger",
	"Level0StopWritesTrigger":          "--level0_stop_writes_trigger",
	"TargetFileSizeBase":               "--target_file_size_base",
	"MaxBytesForLevelBase":             "--max_bytes_for_level_base",
	"MaxBytesForLevelMultiplier":       "--max_bytes_for_level_multiplier",
	"NumLevels":                        "--num_levels",
	"MaxBackgroundJobs":                "--max_background_jobs",
	"MaxOpenFiles":                     "--open_files",
	"BlockSize":                        "--block_size",
	"BloomBitsPerKey":                  "--bloom_bits",
	"BlockCacheSize":                   "--cache_size",
	"Compression":                      "--compression_type",
	"DisableAutoCompactions":           "--disable_auto_compactions",
	"UseDirectReads":                   "--use_direct_reads",
	"AllowMmapReads":                   "--mmap_read",
	"UseDirectIOForFlushAndCompaction": "--use_direct_io_for_flush_and_compaction",
	"MaxAutoReadaheadSize":             "--max_auto_readahead_size",
	"BytesPerSync":                     "--bytes_per_sync",
	"RateLimiter":                      "--rate_limiter_bytes_per_sec",
	"DisableIOUring":                   "--disable_io_uring",
	"IOUringSQPoll":                    "--io_uring_sqpoll",
	"WALBackgroundWrites":              "--wal_background_writes",
	"Statistics":                       "--statistics",
	"PrefixExtractor":                  "--prefix_size",
	"MemtablePrefixBloomSizeRatio":     "--memtable_bloom_size_ratio",
	"IndexType":                        "--index_type",
	"PartitionFilters":                 "--partition_index_and_filters",
	"MetadataBlockSize":                "--metadata_block_size",
}

// warnRecoveryLosses prints a warning on w for each WAL file whose records
// db's Open dropped (a torn or damaged tail, or records the WAL recovery
// mode skipped). The event log has the same at WARN, but in a LOG file no
// command-line user reads, and one that a few more commands rotate away.
func warnRecoveryLosses(w io.Writer, db *shale.DB) {
	if w == nil {
		return
	}
	for _, l := range db.Metrics().Recovery.Losses {
		fmt.Fprintf(w, "shale: warning: opening the database dropped %d WAL record(s), %d bytes, of %s from offset %d: %s\n",
			l.Records, l.Bytes, l.File, l.Offset, l.Reason)
	}
}
