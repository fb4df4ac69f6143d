package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/stresslog"
	"github.com/shaledb/shale/vfs"
	"github.com/spf13/cobra"
)

// stressChildEnv makes a test binary run `stress child` (see stress_test.go's
// TestMain); the shale binary runs its arguments and ignores it.
const stressChildEnv = "SHALE_STRESS_CHILD"

// stressConfig is what `shale stress` and its child share.
type stressConfig struct {
	dir             string // holds db/ and expected/
	kills           int
	duration        time.Duration
	seed            uint64
	sync            bool
	writeBufferSize int
	targetFileSize  int64
	valueSize       int
	keys            int
	threads         int
	killMin         time.Duration
	killMax         time.Duration
	// deletePolicy is how tables are compacted for their tombstones (see
	// stressDeletePolicies).
	deletePolicy string
	// deletePersistence is Options.DeletePersistenceThreshold (0: off).
	deletePersistence time.Duration
	// secondaryDeletes makes writers issue DeleteBySecondaryRange now and
	// then (stresslog.OpSecondaryDelete).
	secondaryDeletes bool
	// enableBlobFiles and minBlobSize are Options.EnableBlobFiles and
	// MinBlobSize of the child's database.
	enableBlobFiles bool
	minBlobSize     int64
	// blobWriteSeparation is Options.EnableBlobWriteSeparation: values go
	// to blob files at commit.
	blobWriteSeparation bool
	// enableBlobGC, blobGCAgeCutoff and blobGCForceThreshold are
	// Options.EnableBlobGarbageCollection, BlobGarbageCollectionAgeCutoff
	// and BlobGarbageCollectionForceThreshold.
	enableBlobGC                          bool
	blobGCAgeCutoff, blobGCForceThreshold float64
	// allowMmapReads and allowMmapWrites are Options.AllowMmapReads and
	// AllowMmapWrites.
	allowMmapReads, allowMmapWrites bool
	// partitioned gives the child's tables partitioned index and filters
	// (Options.IndexType TwoLevelIndexSearch and PartitionFilters), with
	// small partitions.
	partitioned bool
	// merges makes writers issue Merges (stresslog.OpMerge) under
	// stressMergeOperator.
	merges bool

	// checkpoints makes the child take checkpoints while it writes
	// (DIR/checkpoints), which the parent checks after each kill
	// (verifyCheckpoints).
	checkpoints bool
	// secondaryInstance makes the parent follow the child's database with
	// a secondary instance (OpenAsSecondary in DIR/secondary): catching up
	// and reading while the child writes, and after each kill comparing
	// its state with the reopened database's.
	secondaryInstance bool

	// backups makes the child add backups to DIR/backups while it writes
	// (BackupEngine.CreateNewBackup), which the parent restores and checks
	// after each kill (verifyBackups).
	backups bool
}

// stressMergeOperator is the merge operator of --merges: an operand names
// its key and batch (stressOperand), appended after a comma.
var stressMergeOperator = shale.StringAppendOperator(",")

// stressDeletePolicies are the values of --delete_policy: the built-in
// tombstone-density policy, a deletion collector (RocksDB's
// CompactOnDeletionCollector with a small window) on top of it, the
// built-in policy off, or, with "mixed", each child one of the three in
// turn, so that compactions for tombstones are in flight at the kills.
var stressDeletePolicies = []string{"default", "collector", "off", "mixed"}

func defaultStressConfig() stressConfig {
	return stressConfig{
		kills:           100,
		writeBufferSize: 64 << 10,
		targetFileSize:  64 << 10,
		valueSize:       100,
		keys:            1000,
		threads:         4,
		killMin:         20 * time.Millisecond,
		killMax:         300 * time.Millisecond,
		deletePolicy:    "mixed",
	}
}

func (c *stressConfig) dbDir() string { return filepath.Join(c.dir, "db") }

func (c *stressConfig) logName(gen, thread int) string {
	return filepath.Join(c.dir, "expected", fmt.Sprintf("%06d-%02d.log", gen, thread))
}

// dbOptions keeps buffers and files small, so that flushes and compactions
// run all the time and are in progress at most kills. The parent opens with
// the "default" delete policy when --delete_policy is mixed.
func (c *stressConfig) dbOptions() *shale.Options { return c.dbOptionsOf(-1) }

// dbOptionsOf is dbOptions for the child of generation gen (-1: the
// parent), which picks its delete policy when --delete_policy is mixed.
func (c *stressConfig) dbOptionsOf(gen int) *shale.Options {
	o := c.baseOptions()
	policy := c.deletePolicy
	if policy == "mixed" {
		policy = "default"
		if gen >= 0 {
			policy = stressDeletePolicies[gen%3]
		}
	}
	switch policy {
	case "collector":
		o.TablePropertiesCollectorFactories = []shale.TablePropertiesCollectorFactory{
			shale.NewCompactOnDeletionCollectorFactory(64, 16, 0.5)}
	case "off":
		o.DisableDeleteAwareCompaction = true
	}
	return o
}

// indexType is the child's Options.IndexType (see partitioned).
func (c *stressConfig) indexType() shale.IndexType {
	if c.partitioned {
		return shale.TwoLevelIndexSearch
	}
	return shale.BinarySearchIndex
}

func (c *stressConfig) baseOptions() *shale.Options {
	return &shale.Options{
		CreateIfMissing:                true,
		WriteBufferSize:                c.writeBufferSize,
		MaxWriteBufferNumber:           3,
		Level0FileNumCompactionTrigger: 2,
		Level0SlowdownWritesTrigger:    8,
		Level0StopWritesTrigger:        16,
		TargetFileSizeBase:             c.targetFileSize,
		MaxBytesForLevelBase:           4 * c.targetFileSize,
		BlockSize:                      1 << 10,
		BlockCacheSize:                 1 << 20,
		DeletePersistenceThreshold:     c.deletePersistence,
		// Set unless blob files are on without secondary deletes (values
		// stay inline while it is set): a database holding secondary
		// tombstones needs it to open, and without them it only records
		// attribute ranges.
		SecondaryDeleteKey:        c.secondaryDeleteKey(),
		EnableBlobFiles:           c.enableBlobFiles,
		EnableBlobWriteSeparation: c.blobWriteSeparation,
		MinBlobSize:               c.minBlobSize,
		// Small, so that blob files roll and compactions delete them at
		// kill time.
		BlobFileSize:                        int64(max(c.writeBufferSize/4, 4<<10)),
		EnableBlobGarbageCollection:         c.enableBlobGC,
		BlobGarbageCollectionAgeCutoff:      c.blobGCAgeCutoff,
		BlobGarbageCollectionForceThreshold: c.blobGCForceThreshold,
		AllowMmapReads:                      c.allowMmapReads,
		AllowMmapWrites:                     c.allowMmapWrites,
		MergeOperator:                       c.mergeOperator(),
		IndexType:                           c.indexType(),
		PartitionFilters:                    c.partitioned,
		// Small, so that every table has many partitions.
		MetadataBlockSize: 256,
	}
}

// mergeOperator is the child's Options.MergeOperator: stressMergeOperator
// with --merges.
func (c *stressConfig) mergeOperator() shale.MergeOperator {
	if c.merges {
		return stressMergeOperator
	}
	return nil
}

// secondaryDeleteKey is the child's Options.SecondaryDeleteKey: none when
// blob files are on and writers issue no secondary deletes, so that values
// go to blob files, and none with --merges, which it cannot be combined
// with.
func (c *stressConfig) secondaryDeleteKey() func(key, value []byte) (uint64, bool) {
	if c.enableBlobFiles && !c.secondaryDeletes || c.merges {
		return nil
	}
	return stressAttr
}

// stressAttr is the secondary attribute of a stress value: the batch that
// wrote it, as gen<<40 | thread<<32 | seq (stressAttrOf).
func stressAttr(key, value []byte) (uint64, bool) {
	k, ok := parseStressKey(key)
	if !ok {
		return 0, false
	}
	id, named, _ := parseStressValue(k, value)
	if !named || id.seq >= 1<<32 || id.thread >= 256 || id.gen < 0 || id.gen >= 1<<23 {
		return 0, false
	}
	return stressAttrOf(batchID{id.gen, id.thread, 0}, id.seq), true
}

// stressAttrOf is the attribute of the values of batch seq of id's writer.
func stressAttrOf(id batchID, seq uint64) uint64 {
	return uint64(id.gen)<<40 | uint64(id.thread)<<32 | seq
}

func (c *stressConfig) validate() error {
	switch {
	case c.dir == "":
		return errors.New("stress: --db is required")
	case c.threads < 1 || c.threads > 64:
		return fmt.Errorf("stress: --threads must be between 1 and 64, got %d", c.threads)
	case c.keys < c.threads || c.keys > 1_000_000:
		return fmt.Errorf("stress: --keys must be between --threads (%d) and 1000000, got %d", c.threads, c.keys)
	case c.valueSize < 0 || c.valueSize > 1<<20:
		return fmt.Errorf("stress: --value_size must be between 0 and 1 MiB, got %d", c.valueSize)
	case c.kills < 0 || c.duration < 0:
		return errors.New("stress: --kills and --duration must not be negative")
	case c.kills == 0 && c.duration == 0:
		return errors.New("stress: give --kills or --duration (or both)")
	case c.killMin < 0 || c.killMax < c.killMin:
		return fmt.Errorf("stress: need 0 <= --kill_min (%v) <= --kill_max (%v)", c.killMin, c.killMax)
	case !slices.Contains(stressDeletePolicies, c.deletePolicy):
		return fmt.Errorf("stress: --delete_policy must be one of %s, got %q", strings.Join(stressDeletePolicies, ", "), c.deletePolicy)
	case c.deletePersistence < 0:
		return fmt.Errorf("stress: --delete_persistence_threshold must not be negative, got %v", c.deletePersistence)
	case c.minBlobSize < 0:
		return fmt.Errorf("stress: --min_blob_size must not be negative, got %d", c.minBlobSize)
	case c.merges && c.secondaryDeletes:
		return errors.New("stress: --merges and --secondary_deletes cannot be combined (Options.MergeOperator refuses SecondaryDeleteKey)")
	}
	return nil
}

// childArgs are the arguments of the child of generation gen.
func (c *stressConfig) childArgs(gen int, seed uint64) []string {
	return []string{"stress", "child",
		"--db", c.dir,
		"--gen", strconv.Itoa(gen),
		"--seed", strconv.FormatUint(seed, 10),
		"--sync=" + strconv.FormatBool(c.sync),
		"--write_buffer_size", strconv.Itoa(c.writeBufferSize),
		"--target_file_size_base", strconv.FormatInt(c.targetFileSize, 10),
		"--value_size", strconv.Itoa(c.valueSize),
		"--keys", strconv.Itoa(c.keys),
		"--threads", strconv.Itoa(c.threads),
		"--delete_policy", c.deletePolicy,
		"--delete_persistence_threshold", c.deletePersistence.String(),
		"--secondary_deletes=" + strconv.FormatBool(c.secondaryDeletes),
		"--enable_blob_files=" + strconv.FormatBool(c.enableBlobFiles),
		"--enable_blob_write_separation=" + strconv.FormatBool(c.blobWriteSeparation),
		"--min_blob_size", strconv.FormatInt(c.minBlobSize, 10),
		"--enable_blob_garbage_collection=" + strconv.FormatBool(c.enableBlobGC),
		"--blob_garbage_collection_age_cutoff", strconv.FormatFloat(c.blobGCAgeCutoff, 'g', -1, 64),
		"--blob_garbage_collection_force_threshold", strconv.FormatFloat(c.blobGCForceThreshold, 'g', -1, 64),
		"--allow_mmap_reads=" + strconv.FormatBool(c.allowMmapReads),
		"--allow_mmap_writes=" + strconv.FormatBool(c.allowMmapWrites),
		"--partition_index_and_filters=" + strconv.FormatBool(c.partitioned),
		"--merges=" + strconv.FormatBool(c.merges),
		"--checkpoints=" + strconv.FormatBool(c.checkpoints),
		"--backups=" + strconv.FormatBool(c.backups),
	}
}

func newStressCmd() *cobra.Command {
	cfg := defaultStressConfig()
	cmd := &cobra.Command{
		Use:   "stress --db DIR [--kills N] [--duration D] [--seed S] [--sync] ...",
		Short: "Kill a writing child process again and again and verify no acknowledged write is lost",
		Long: `stress is the process-crash test. It starts a child process (this binary,
re-executed) that writes random batches of puts, deletes and range deletes
with --threads writers, each on its own part of a --keys key space, and logs
every batch before committing it and again once it is acknowledged. After a
random time between --kill_min and --kill_max (sometimes earlier, while the
child is still opening the database) it kills the child with SIGKILL
(TerminateProcess on Windows), reopens the database, and checks that it
holds exactly every acknowledged batch plus, for each writer, either all or
none of the one batch it had in flight. Then it starts the next child on the
same database. DIR must be missing or empty; the database is DIR/db.
Exit status 1 and a message naming the seed, key, expected and found value
on any violation. See docs/crash-testing.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("seed") {
				cfg.seed = uint64(time.Now().UnixNano())
			}
			return runStress(&cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	registerStressFlags(f, &cfg)
	f.IntVar(&cfg.kills, "kills", cfg.kills, "stop after this many kills (0 = no limit; then --duration bounds the run)")
	f.DurationVar(&cfg.duration, "duration", 0, "stop starting children after this long (0 = no limit)")
	f.DurationVar(&cfg.killMin, "kill_min", cfg.killMin, "shortest time a child writes before it is killed")
	f.DurationVar(&cfg.killMax, "kill_max", cfg.killMax, "longest time a child writes before it is killed")
	f.BoolVar(&cfg.secondaryInstance, "secondary_instance", false,
		"follow the database with a secondary instance (OpenAsSecondary, in DIR/secondary) that catches up and reads while each child writes, and after each kill must show what the reopened database shows")
	cmd.AddCommand(newStressChildCmd())
	return cmd
}

func registerStressFlags(f interface {
	StringVar(*string, string, string, string)
	Uint64Var(*uint64, string, uint64, string)
	Float64Var(*float64, string, float64, string)
	BoolVar(*bool, string, bool, string)
	IntVar(*int, string, int, string)
	Int64Var(*int64, string, int64, string)
	DurationVar(*time.Duration, string, time.Duration, string)
}, cfg *stressConfig) {
	f.StringVar(&cfg.dir, "db", "", "directory of the run: the database goes to DIR/db, the expected-state logs to DIR/expected (required)")
	f.Uint64Var(&cfg.seed, "seed", 0, "seed of the writes and of the kill times (default: from the clock; printed)")
	f.BoolVar(&cfg.sync, "sync", false, "sync the WAL on every batch")
	f.IntVar(&cfg.writeBufferSize, "write_buffer_size", cfg.writeBufferSize, "memtable size in bytes (small, so flushes run at kill time)")
	f.Int64Var(&cfg.targetFileSize, "target_file_size_base", cfg.targetFileSize, "target size of compaction outputs in bytes")
	f.IntVar(&cfg.valueSize, "value_size", cfg.valueSize, "mean value size in bytes (values are 0.5x to 1.5x)")
	f.IntVar(&cfg.keys, "keys", cfg.keys, "size of the key space, split evenly among the writers")
	f.IntVar(&cfg.threads, "threads", cfg.threads, "concurrent writer goroutines in the child")
	f.StringVar(&cfg.deletePolicy, "delete_policy", cfg.deletePolicy,
		"how tables are compacted for their tombstones: default (the built-in tombstone-density policy), collector (a deletion collector too), off (Options.DisableDeleteAwareCompaction), or mixed (each child one of the three in turn)")
	f.DurationVar(&cfg.deletePersistence, "delete_persistence_threshold", 0,
		"Options.DeletePersistenceThreshold of the child's database: deleted data leaves the files within this time (0 = off)")
	f.BoolVar(&cfg.secondaryDeletes, "secondary_deletes", false,
		"writers also issue DeleteBySecondaryRange over the values of some of their own earlier batches")
	f.BoolVar(&cfg.enableBlobFiles, "enable_blob_files", false,
		"Options.EnableBlobFiles of the child's database: values go to blob files (kept inline with --secondary_deletes)")
	f.BoolVar(&cfg.blobWriteSeparation, "enable_blob_write_separation", false,
		"Options.EnableBlobWriteSeparation of the child's database: with --enable_blob_files, values go to blob files at commit and the WAL holds their indexes")
	f.Int64Var(&cfg.minBlobSize, "min_blob_size", 0,
		"Options.MinBlobSize of the child's database: the smallest value put in a blob file (0 = every non-empty value)")
	f.BoolVar(&cfg.enableBlobGC, "enable_blob_garbage_collection", false,
		"Options.EnableBlobGarbageCollection of the child's database: compactions relocate the values of old blob files")
	f.Float64Var(&cfg.blobGCAgeCutoff, "blob_garbage_collection_age_cutoff", 0.25,
		"Options.BlobGarbageCollectionAgeCutoff of the child's database: the fraction of blob files, oldest first, that GC relocates")
	f.Float64Var(&cfg.blobGCForceThreshold, "blob_garbage_collection_force_threshold", 1,
		"Options.BlobGarbageCollectionForceThreshold of the child's database: the garbage ratio of an old blob file that forces compactions of its tables")
	f.BoolVar(&cfg.allowMmapReads, "allow_mmap_reads", false,
		"Options.AllowMmapReads of the child's database: tables and blob files are read through memory mappings")
	f.BoolVar(&cfg.allowMmapWrites, "allow_mmap_writes", false,
		"Options.AllowMmapWrites of the child's database: WALs are written through memory mappings (a kill must lose no acknowledged write all the same)")
	f.BoolVar(&cfg.partitioned, "partition_index_and_filters", false,
		"the child's tables get partitioned index and filters (Options.IndexType TwoLevelIndexSearch, PartitionFilters; db_bench's flag)")
	f.BoolVar(&cfg.merges, "merges", false,
		"writers also issue Merges under a string-append merge operator (Options.MergeOperator of the child's database)")
	f.BoolVar(&cfg.checkpoints, "checkpoints", false,
		"the child also takes checkpoints (DB.Checkpoint into DIR/checkpoints) while it writes; after each kill every checkpoint, and a staging directory that opens, must hold a prefix of each writer's batches covering those acknowledged before its call")
	f.BoolVar(&cfg.backups, "backups", false,
		"the child also adds backups to DIR/backups (BackupEngine.CreateNewBackup) while it writes; after each kill every backup must restore to a prefix of each writer's batches covering those acknowledged before its call")
}

func newStressChildCmd() *cobra.Command {
	cfg := defaultStressConfig()
	var gen int
	cmd := &cobra.Command{
		Use:    "child",
		Short:  "The writer process of stress (started by stress itself)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cfg.validate(); err != nil {
				return err
			}
			return runStressChild(&cfg, gen, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	registerStressFlags(cmd.Flags(), &cfg)
	cmd.Flags().IntVar(&gen, "gen", 0, "generation: the number of this child")
	return cmd
}

// batchID names a batch: the child (generation) that wrote it, its writer
// and its number in that writer's log.
type batchID struct {
	gen, thread int
	seq         uint64
}

func (id batchID) String() string { return fmt.Sprintf("%d.%d.%d", id.gen, id.thread, id.seq) }

// stressKey returns key number k of the key space; the padding keeps
// numeric order.
func stressKey(dst []byte, k uint32) []byte {
	dst = append(dst, 'k')
	s := strconv.AppendUint(nil, uint64(k), 10)
	for i := len(s); i < 7; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

func parseStressKey(key []byte) (uint32, bool) {
	if len(key) != 8 || key[0] != 'k' {
		return 0, false
	}
	v, err := strconv.ParseUint(string(key[1:]), 10, 32)
	return uint32(v), err == nil
}

// stressValue returns the value batch id puts at key k: "k@g.t.s|" and
// filler derived from both, n bytes in all (or just the prefix when n is
// shorter), so that any value found names the batch that wrote it and any
// damaged byte shows.
func stressValue(dst []byte, k uint32, id batchID, n int) []byte {
	start := len(dst)
	dst = stressKey(dst, k)
	dst = fmt.Appendf(dst, "@%s|", id)
	h := uint64(k)*0x9e3779b97f4a7c15 ^ uint64(id.gen)<<40 ^ uint64(id.thread)<<32 ^ id.seq
	for len(dst)-start < n {
		h ^= h << 13
		h ^= h >> 7
		h ^= h << 17
		dst = append(dst, 'a'+byte(h%26))
	}
	return dst
}

// parseStressValue returns the batch a value names and whether the value
// is exactly what that batch wrote at key k.
func parseStressValue(k uint32, v []byte) (id batchID, named, exact bool) {
	at := bytes.IndexByte(v, '@')
	bar := bytes.IndexByte(v, '|')
	if at < 0 || bar < at {
		return id, false, false
	}
	parts := strings.Split(string(v[at+1:bar]), ".")
	if len(parts) != 3 {
		return id, false, false
	}
	var errs [3]error
	id.gen, errs[0] = strconv.Atoi(parts[0])
	id.thread, errs[1] = strconv.Atoi(parts[1])
	id.seq, errs[2] = strconv.ParseUint(parts[2], 10, 64)
	if errors.Join(errs[:]...) != nil {
		return id, false, false
	}
	return id, true, bytes.Equal(v, stressValue(nil, k, id, len(v)))
}

// describeFound says what was found at key k: absent, the value of a batch,
// or garbage.
func describeFound(k uint32, v []byte) string {
	if v == nil {
		return "absent"
	}
	if bytes.IndexByte(v, ',') >= 0 {
		return fmt.Sprintf("the merged value %q", truncate(v))
	}
	id, named, exact := parseStressValue(k, v)
	switch {
	case !named:
		return fmt.Sprintf("garbage %q", truncate(v))
	case !exact:
		return fmt.Sprintf("a damaged or misplaced value naming batch %s: %q", id, truncate(v))
	}
	return fmt.Sprintf("the value of batch %s (%d bytes)", id, len(v))
}

// verdict names the kind of violation at key k.
func verdict(want keyState, k uint32, v []byte) string {
	id, named, exact := parseStressValue(k, v)
	switch {
	case want.merges != "" || bytes.IndexByte(v, ',') >= 0:
		return "a merged value differs (an operand lost, doubled or out of order, or its base)"
	case v != nil && (!named || !exact):
		return "a damaged value"
	case want.present && v == nil:
		return "an acknowledged write is lost"
	case want.present && (id.gen < want.id.gen || id.gen == want.id.gen && id.seq < want.id.seq):
		return "an acknowledged write is lost (an older value shows)"
	case !want.present && v != nil:
		return "an acknowledged delete is lost, or a write no batch made shows"
	}
	return "a write no acknowledged or in-flight batch made shows"
}

func truncate(v []byte) []byte {
	if len(v) > 64 {
		return v[:64]
	}
	return v
}

// keyState is what the model expects at one key: the value a batch put
// (present), and the operands merged since, joined as stressMergeOperator
// joins them.
type keyState struct {
	present bool
	id      batchID
	n       uint32 // value length asked for
	merges  string
}

// value returns the bytes expected at key k, nil when absent.
func (s keyState) value(k uint32) []byte {
	var v []byte
	if s.present {
		v = stressValue(nil, k, s.id, int(s.n))
		if s.merges != "" {
			v = append(v, ',')
		}
	} else if s.merges == "" {
		return nil
	}
	return append(v, s.merges...)
}

func (s keyState) describe(k uint32) string {
	switch {
	case s.merges != "":
		return fmt.Sprintf("the merged value %q", truncate(s.value(k)))
	case !s.present:
		return "absent"
	}
	return fmt.Sprintf("the value of batch %s (%d bytes)", s.id, len(stressValue(nil, k, s.id, int(s.n))))
}

// stressOperand returns the operand batch id merges into key k: the key,
// "@" and the batch.
func stressOperand(dst []byte, k uint32, id batchID) []byte {
	return fmt.Appendf(stressKey(dst, k), "@%s", id)
}

// stressModel is the expected state of consecutive keys, one entry per key;
// the whole model starts at key 0, a writer's part of it at the writer's
// first key.
type stressModel []keyState

// apply applies a batch's operations in order, as the DB does (later
// entries of a batch get higher seqnums); m holds the keys from lo on.
func (m stressModel) apply(lo uint32, id batchID, ops []stresslog.Op) {
	for _, op := range ops {
		switch op.Kind {
		case stresslog.OpPut:
			m[op.Key-lo] = keyState{present: true, id: id, n: op.Arg}
		case stresslog.OpDelete:
			m[op.Key-lo] = keyState{}
		case stresslog.OpMerge:
			s := &m[op.Key-lo]
			if s.merges != "" {
				s.merges += ","
			}
			s.merges += string(stressOperand(nil, op.Key, id))
		case stresslog.OpDeleteRange:
			for k := op.Key; k < op.Arg; k++ {
				m[k-lo] = keyState{}
			}
		case stresslog.OpSecondaryDelete:
			for i, s := range m {
				if s.present && s.id.gen == id.gen && s.id.thread == id.thread &&
					s.id.seq >= uint64(op.Key) && s.id.seq < uint64(op.Arg) {
					m[i] = keyState{}
				}
			}
		}
	}
}

// mismatches returns the first key where found differs from m (which holds
// the keys from lo on), or -1, and how many keys differ.
func (m stressModel) mismatches(lo uint32, found [][]byte) (first, n int) {
	first = -1
	for i, s := range m {
		k := lo + uint32(i)
		if !matches(s, k, found[k]) {
			if first < 0 {
				first = int(k)
			}
			n++
		}
	}
	return first, n
}

func matches(s keyState, k uint32, v []byte) bool {
	want := s.value(k)
	return (v == nil) == (want == nil) && bytes.Equal(v, want)
}

// partition returns the keys writer t owns: [lo, hi).
func partition(keys, threads, t int) (lo, hi uint32) {
	return uint32(t * keys / threads), uint32((t + 1) * keys / threads)
}

// genOps draws a random batch over the keys [lo, hi): often one overwrite,
// sometimes a lone delete or range delete, otherwise a mix of up to 12 ops
// (the same key may appear twice; the later op wins).
func genOps(rng *rand.Rand, lo, hi uint32, valueSize int, merges bool, ops []stresslog.Op) []stresslog.Op {
	span := int(hi - lo)
	key := func() uint32 { return lo + uint32(rng.IntN(span)) }
	put := func() stresslog.Op {
		return stresslog.Op{Kind: stresslog.OpPut, Key: key(), Arg: uint32(valueSize/2 + rng.IntN(valueSize+1))}
	}
	del := func() stresslog.Op { return stresslog.Op{Kind: stresslog.OpDelete, Key: key()} }
	if merges && rng.IntN(4) == 0 {
		// Merges, alone or several, some on one key.
		for n := 1 + rng.IntN(4); n > 0; n-- {
			ops = append(ops, stresslog.Op{Kind: stresslog.OpMerge, Key: key()})
		}
		if rng.IntN(3) == 0 {
			ops = append(ops, put())
		}
		return ops
	}
	rangeDel := func() stresslog.Op {
		start := key()
		return stresslog.Op{Kind: stresslog.OpDeleteRange, Key: start, Arg: min(hi, start+1+uint32(rng.IntN(16)))}
	}
	switch r := rng.IntN(100); {
	case r < 40:
		return append(ops, put())
	case r < 50:
		return append(ops, del())
	case r < 55:
		return append(ops, rangeDel())
	}
	for n := 2 + rng.IntN(11); n > 0; n-- {
		switch r := rng.IntN(100); {
		case r < 65:
			ops = append(ops, put())
		case r < 85:
			ops = append(ops, del())
		default:
			ops = append(ops, rangeDel())
		}
	}
	return ops
}

// runStressChild opens the DB and writes until it is killed. It prints
// "ready" once the DB is open, then every few milliseconds a line
// "m FLUSHES COMPACTIONS MEMTABLES L0FILES" from the DB's metrics. It also
// exits when stdin closes (the parent died), so that no orphan writes on.
func runStressChild(cfg *stressConfig, gen int, stdin io.Reader, stdout io.Writer) error {
	db, err := shale.Open(cfg.dbDir(), cfg.dbOptionsOf(gen))
	if err != nil {
		return fmt.Errorf("stress child %d: opening %s: %w", gen, cfg.dbDir(), err)
	}
	// The DB is never closed: the process ends by SIGKILL.
	if _, err := fmt.Fprintln(stdout, "ready"); err != nil {
		return err
	}
	parentGone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, stdin)
		close(parentGone)
	}()
	errc := make(chan error, cfg.threads+2)
	acked := make([]atomic.Uint64, cfg.threads)
	for t := 0; t < cfg.threads; t++ {
		go func() { errc <- stressWriter(cfg, db, gen, t, &acked[t]) }()
	}
	if cfg.checkpoints {
		go func() { errc <- stressCheckpointer(cfg, db, gen, acked) }()
	}
	if cfg.backups {
		go func() { errc <- stressBackupper(cfg, db, gen, acked) }()
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-errc:
			return err
		case <-parentGone:
			return fmt.Errorf("stress child %d: the parent closed stdin", gen)
		case <-tick.C:
			m := db.Metrics()
			l0 := 0
			if len(m.Levels) > 0 {
				l0 = m.Levels[0].NumFiles
			}
			fmt.Fprintf(stdout, "m %d %d %d %d\n", m.Flush.Count, m.Compact.Count, m.MemtableCount, l0)
		}
	}
}

// stressWriter is writer t of child gen: it logs each batch as pending,
// writes it, and logs the ack (and stores the batch's number in acked),
// until an error (or the kill).
func stressWriter(cfg *stressConfig, db *shale.DB, gen, t int, acked *atomic.Uint64) error {
	lo, hi := partition(cfg.keys, cfg.threads, t)
	rng := rand.New(rand.NewPCG(cfg.seed, uint64(gen)<<8|uint64(t)))
	log, err := stresslog.Create(vfs.Default, cfg.logName(gen, t))
	if err != nil {
		return err
	}
	wo := &shale.WriteOptions{Sync: cfg.sync}
	b := db.NewBatch()
	var ops []stresslog.Op
	var key, val []byte
	for seq := uint64(1); ; seq++ {
		if cfg.secondaryDeletes && rng.IntN(30) == 0 {
			first := 1 + rng.Uint64N(seq)
			ops = append(ops[:0], stresslog.Op{Kind: stresslog.OpSecondaryDelete, Key: uint32(first), Arg: uint32(first + 1 + rng.Uint64N(40))})
		} else {
			ops = genOps(rng, lo, hi, cfg.valueSize, cfg.merges, ops[:0])
		}
		if err := log.Pending(seq, ops); err != nil {
			return err
		}
		id := batchID{gen, t, seq}
		if op := ops[0]; op.Kind == stresslog.OpSecondaryDelete {
			if err := db.DeleteBySecondaryRange(stressAttrOf(id, uint64(op.Key)), stressAttrOf(id, uint64(op.Arg)), wo); err != nil {
				return fmt.Errorf("stress child %d: writer %d: batch %s: %w", gen, t, id, err)
			}
			if err := log.Acked(seq); err != nil {
				return err
			}
			acked.Store(seq)
			continue
		}
		b.Reset()
		for _, op := range ops {
			key = stressKey(key[:0], op.Key)
			switch op.Kind {
			case stresslog.OpPut:
				val = stressValue(val[:0], op.Key, id, int(op.Arg))
				b.Put(key, val)
			case stresslog.OpDelete:
				b.Delete(key)
			case stresslog.OpMerge:
				b.Merge(key, stressOperand(val[:0], op.Key, id))
			case stresslog.OpDeleteRange:
				val = stressKey(val[:0], op.Arg)
				b.DeleteRange(key, val)
			}
		}
		if err := db.Write(b, wo); err != nil {
			return fmt.Errorf("stress child %d: writer %d: batch %s: %w", gen, t, id, err)
		}
		if err := log.Acked(seq); err != nil {
			return err
		}
		acked.Store(seq)
	}
}

// checkpointsDir is where the child of --checkpoints puts its checkpoints.
func (c *stressConfig) checkpointsDir() string { return filepath.Join(c.dir, "checkpoints") }

// stressCheckpointer takes a checkpoint every 10 to 50 ms, until an error
// (or the kill). Each is named for its child and number and for the batches
// each writer had acknowledged before the call: GEN-N-A0.A1..., which the
// parent reads back (parseCheckpointName).
func stressCheckpointer(cfg *stressConfig, db *shale.DB, gen int, acked []atomic.Uint64) error {
	rng := rand.New(rand.NewPCG(cfg.seed, uint64(gen)<<8|0xcc))
	for n := 0; ; n++ {
		time.Sleep(time.Duration(10+rng.IntN(41)) * time.Millisecond)
		counts := make([]string, len(acked))
		for t := range acked {
			counts[t] = strconv.FormatUint(acked[t].Load(), 10)
		}
		name := fmt.Sprintf("%06d-%04d-%s", gen, n, strings.Join(counts, "."))
		if err := db.Checkpoint(filepath.Join(cfg.checkpointsDir(), name)); err != nil {
			return fmt.Errorf("stress child %d: checkpoint %d: %w", gen, n, err)
		}
	}
}

// parseCheckpointName returns the child and the acknowledged batch counts
// that a checkpoint's name (or its staging directory's) records.
func parseCheckpointName(name string, threads int) (gen int, acked []uint64, staging bool, err error) {
	name, staging = strings.CutSuffix(name, ".tmp")
	parts := strings.Split(name, "-")
	if len(parts) == 3 {
		gen, err = strconv.Atoi(parts[0])
		counts := strings.Split(parts[2], ".")
		for _, c := range counts {
			n, perr := strconv.ParseUint(c, 10, 64)
			err = errors.Join(err, perr)
			acked = append(acked, n)
		}
		if err == nil && len(acked) == threads {
			return gen, acked, staging, nil
		}
	}
	return 0, nil, false, fmt.Errorf("checkpoint %q: not a name the child gives", name)
}

// verifyCheckpoints checks the checkpoints child gen took, before the model
// moves past the gen's batches (logs are its writers' logs): each must open
// and hold, for every writer, the model after some prefix of the writer's
// batches that includes every batch acknowledged before its call. A staging
// directory the kill left must not open, or hold the same. All are then
// removed.
func (r *stressRun) verifyCheckpoints(gen int, logs []*stresslog.Log) error {
	dir := r.cfg.checkpointsDir()
	names, err := vfs.Default.List(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	slices.Sort(names)
	for _, name := range names {
		cgen, acked, staging, err := parseCheckpointName(name, r.cfg.threads)
		if err != nil {
			return err
		}
		if cgen != gen {
			return fmt.Errorf("checkpoint %s of child %d is still there while verifying child %d", name, cgen, gen)
		}
		path := filepath.Join(dir, name)
		o := r.cfg.dbOptions()
		o.CreateIfMissing = false
		db, err := shale.OpenForReadOnly(path, o)
		switch {
		case err != nil && staging:
			r.stats.stagingCheckpoints++
		case err != nil:
			return fmt.Errorf("checkpoint %s does not open: %w", name, err)
		default:
			found, err := readStressState(db, r.cfg.keys)
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = r.checkCheckpointState(gen, logs, acked, found)
			}
			if err != nil {
				return fmt.Errorf("checkpoint %s: %w", name, err)
			}
			r.stats.checkpoints++
		}
		if err := vfs.Default.RemoveAll(path); err != nil {
			return err
		}
	}
	return nil
}

// checkCheckpointState checks that found holds, for each writer t, the
// model (as before child gen) after the first k of its logged batches, for
// some k >= acked[t].
func (r *stressRun) checkCheckpointState(gen int, logs []*stresslog.Log, acked []uint64, found [][]byte) error {
	for t, l := range logs {
		lo, hi := partition(r.cfg.keys, r.cfg.threads, t)
		part := append(stressModel(nil), r.model[lo:hi]...)
		ok := false
		for k := 0; k <= len(l.Batches) && !ok; k++ {
			if k > 0 {
				b := &l.Batches[k-1]
				part.apply(lo, batchID{gen, t, b.Seq}, b.Ops)
			}
			if uint64(k) >= acked[t] {
				first, _ := part.mismatches(lo, found)
				ok = first < 0
			}
		}
		if !ok {
			return fmt.Errorf("writer %d's keys match the state after no prefix of its %d batches that holds the %d acknowledged before the checkpoint",
				t, len(l.Batches), acked[t])
		}
	}
	return nil
}

// stressStats are the figures stress prints.
type stressStats struct {
	kills, earlyKills         int
	ackedBatches, ackedOps    int
	inFlight                  int
	applied, absent, sameBoth int
	tornLogs                  int
	killsWithBackground       int
	killsWithMetrics          int
	flushes, compactions      uint64
	// checkpoints counts the checkpoints verified (--checkpoints), and
	// stagingCheckpoints the staging directories a kill left that did not
	// open.
	checkpoints, stagingCheckpoints int
	// secondaryCatchUps counts the secondary instance's catch-ups while
	// children wrote, secondaryCompared the kills after which its state
	// was compared with the reopened database's.
	secondaryCatchUps, secondaryCompared int
	// backups counts the backups restored and verified (--backups).
	backups int
	// Time spent starting children until they opened the DB, letting them
	// write, and verifying.
	opening, writing, verifying time.Duration
}

// stressRun is the parent's state.
type stressRun struct {
	cfg   *stressConfig
	exe   string
	rng   *rand.Rand
	model stressModel
	stats stressStats
	// readyAfter is how long the last child took to open the DB; early
	// kills land within it.
	readyAfter time.Duration
	// secondary is the secondary instance of --secondary_instance, opened
	// once the first child has created the database.
	secondary *shale.DB
}

func runStress(cfg *stressConfig, out io.Writer) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	if names, err := vfs.Default.List(cfg.dir); err == nil && len(names) > 0 {
		return fmt.Errorf("stress: %s is not empty; give a missing or empty directory", cfg.dir)
	}
	if err := vfs.Default.MkdirAll(filepath.Join(cfg.dir, "expected"), 0o755); err != nil {
		return fmt.Errorf("stress: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("stress: finding this binary to run as the child: %w", err)
	}
	r := &stressRun{
		cfg:   cfg,
		exe:   exe,
		rng:   rand.New(rand.NewPCG(cfg.seed, 0x57e55)),
		model: make(stressModel, cfg.keys),
	}
	defer func() {
		if r.secondary != nil {
			r.secondary.Close()
		}
	}()
	fmt.Fprintf(out, "stress: seed %d, %d writer threads, %d keys, value_size %d, write_buffer_size %d, sync=%v, delete_persistence_threshold %v\n",
		cfg.seed, cfg.threads, cfg.keys, cfg.valueSize, cfg.writeBufferSize, cfg.sync, cfg.deletePersistence)
	start := time.Now()
	for gen := 1; ; gen++ {
		if cfg.kills > 0 && gen > cfg.kills || cfg.duration > 0 && time.Since(start) >= cfg.duration {
			break
		}
		if err := r.runChild(gen); err != nil {
			return r.fail(gen, err)
		}
		verifyStart := time.Now()
		if err := r.verify(gen); err != nil {
			return r.fail(gen, err)
		}
		r.stats.verifying += time.Since(verifyStart)
		if gen%100 == 0 {
			fmt.Fprintf(out, "  %d kills, %d acked batches verified, %v\n", gen, r.stats.ackedBatches, time.Since(start).Round(time.Millisecond))
		}
	}
	r.printSummary(out, time.Since(start))
	return nil
}

func (r *stressRun) fail(gen int, err error) error {
	return fmt.Errorf("stress: seed %d, kill %d (sync=%v): %w", r.cfg.seed, gen, r.cfg.sync, err)
}

func (r *stressRun) printSummary(out io.Writer, elapsed time.Duration) {
	s := &r.stats
	fmt.Fprintf(out, "kills:                    %d in %v (%v per kill), %d of them while the child opened the DB\n",
		s.kills, elapsed.Round(time.Millisecond), (elapsed / time.Duration(max(s.kills, 1))).Round(time.Millisecond), s.earlyKills)
	per := func(d time.Duration) time.Duration {
		return (d / time.Duration(max(s.kills, 1))).Round(time.Millisecond)
	}
	fmt.Fprintf(out, "time per kill:            %v starting the child and opening the DB, %v writing, %v verifying\n",
		per(s.opening), per(s.writing), per(s.verifying))
	fmt.Fprintf(out, "acked batches verified:   %d (%d operations)\n", s.ackedBatches, s.ackedOps)
	fmt.Fprintf(out, "in-flight batches:        %d: %d applied, %d absent, %d with no visible effect\n",
		s.inFlight, s.applied, s.absent, s.sameBoth)
	fmt.Fprintf(out, "background work at kill:  %d of %d kills with a memtable waiting for flush or L0 at the compaction trigger\n",
		s.killsWithBackground, s.killsWithMetrics)
	fmt.Fprintf(out, "children's work:          %d flushes, %d compactions\n", s.flushes, s.compactions)
	if s.tornLogs > 0 {
		fmt.Fprintf(out, "torn log tails:           %d\n", s.tornLogs)
	}
	if r.cfg.checkpoints {
		fmt.Fprintf(out, "checkpoints verified:     %d, and %d unfinished ones that did not open\n", s.checkpoints, s.stagingCheckpoints)
	}
	if r.cfg.secondaryInstance {
		fmt.Fprintf(out, "secondary instance:       %d catch-ups read while children wrote, %d states after kills equal to the reopened database's\n",
			s.secondaryCatchUps, s.secondaryCompared)
	}
	if r.cfg.backups {
		fmt.Fprintf(out, "backups restored:         %d\n", s.backups)
	}
	fmt.Fprintln(out, "ok: no acknowledged batch lost, every in-flight batch all or nothing")
}

// lockedBuffer collects a child's stderr.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() < 64<<10 {
		b.buf.Write(p)
	}
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runChild starts child gen, lets it run for a random time and kills it.
func (r *stressRun) runChild(gen int) error {
	// The child's seed depends on the run's seed and gen alone, so a seed
	// replays the same batches whatever the timing did to the kill times.
	childSeed := r.cfg.seed ^ uint64(gen)*0x9e3779b97f4a7c15
	cmd := exec.Command(r.exe, r.cfg.childArgs(gen, childSeed)...)
	cmd.Env = append(os.Environ(), stressChildEnv+"=1")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the child: %w", err)
	}
	// The secondary instance follows the child from its start to its kill.
	stopFollowing := func() error { return nil }
	if r.cfg.secondaryInstance {
		stop, done := make(chan struct{}), make(chan error, 1)
		go func() { done <- r.followChild(gen, stop) }()
		var once sync.Once
		var followErr error
		stopFollowing = func() error {
			once.Do(func() { close(stop); followErr = <-done })
			return followErr
		}
		defer stopFollowing()
	}
	ready := make(chan struct{})
	exited := make(chan struct{}) // stdout closed: the child is gone
	var lastMetrics atomic.Pointer[string]
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if line == "ready" {
				close(ready)
			} else if strings.HasPrefix(line, "m ") {
				lastMetrics.Store(&line)
			}
		}
		io.Copy(io.Discard, stdout)
	}()

	early := r.rng.IntN(10) == 0 && r.readyAfter > 0
	var wait time.Duration
	if early {
		wait = time.Duration(r.rng.Int64N(int64(r.readyAfter)))
	} else {
		wait = r.cfg.killMin + time.Duration(r.rng.Int64N(int64(r.cfg.killMax-r.cfg.killMin)+1))
	}
	exitedEarly := false
	if !early {
		select {
		case <-ready:
			r.readyAfter = time.Since(started)
		case <-exited:
			exitedEarly = true
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
			<-exited
			cmd.Wait()
			return fmt.Errorf("the child did not open the database within 2 minutes\n%s", stderr.String())
		}
	}
	if !exitedEarly {
		select {
		case <-exited:
			exitedEarly = true
		case <-time.After(wait):
		}
	}
	select {
	case <-ready:
		early = false // chosen early, but the child was quicker
	default:
		early = true
	}
	killErr := cmd.Process.Kill()
	if early {
		r.stats.opening += time.Since(started)
	} else {
		r.stats.opening += r.readyAfter
		r.stats.writing += time.Since(started) - r.readyAfter
	}
	<-exited
	waitErr := cmd.Wait()
	if exitedEarly || stderr.String() != "" {
		return fmt.Errorf("the child failed before it was killed (%v, kill: %v):\n%s", waitErr, killErr, stderr.String())
	}
	if err := stopFollowing(); err != nil {
		return fmt.Errorf("the secondary instance beside the child: %w", err)
	}
	r.stats.kills++
	if early {
		r.stats.earlyKills++
	}
	if m := lastMetrics.Load(); m != nil {
		var flushes, compactions uint64
		var memtables, l0 int
		if _, err := fmt.Sscanf(*m, "m %d %d %d %d", &flushes, &compactions, &memtables, &l0); err == nil {
			r.stats.killsWithMetrics++
			r.stats.flushes += flushes
			r.stats.compactions += compactions
			if memtables > 1 || l0 >= r.cfg.dbOptions().Level0FileNumCompactionTrigger {
				r.stats.killsWithBackground++
			}
		}
	}
	return nil
}

// followChild catches the secondary instance up with child gen's database
// and reads all of it (readStressState's checks: forward and reverse scans
// and point reads agree), at random moments, until stop is closed.
func (r *stressRun) followChild(gen int, stop <-chan struct{}) error {
	rng := rand.New(rand.NewPCG(r.cfg.seed^uint64(gen), 0x5ec))
	for {
		select {
		case <-stop:
			return nil
		case <-time.After(time.Duration(rng.IntN(20)) * time.Millisecond):
		}
		if r.secondary == nil {
			db, err := shale.OpenAsSecondary(r.cfg.dbDir(), r.secondaryDir(), r.cfg.dbOptions())
			if err != nil {
				continue // the first child has not created the database yet
			}
			r.secondary = db
		}
		if _, err := r.readSecondary(); err != nil {
			return err
		}
		r.stats.secondaryCatchUps++
	}
}

func (r *stressRun) secondaryDir() string { return filepath.Join(r.cfg.dir, "secondary") }

// readSecondary catches the secondary instance up (opening it first when
// needed) and reads the state it shows.
func (r *stressRun) readSecondary() ([][]byte, error) {
	if r.secondary == nil {
		db, err := shale.OpenAsSecondary(r.cfg.dbDir(), r.secondaryDir(), r.cfg.dbOptions())
		if err != nil {
			return nil, err
		}
		r.secondary = db
	}
	if err := r.secondary.TryCatchUpWithPrimary(); err != nil {
		return nil, err
	}
	return readStressState(r.secondary, r.cfg.keys)
}

// verify reads the logs of child gen, reopens the DB and checks it against
// the model: every acked batch applied, each writer's in-flight batch all or
// nothing. It then advances the model and removes the logs.
func (r *stressRun) verify(gen int) error {
	logs := make([]*stresslog.Log, r.cfg.threads)
	for t := range logs {
		l, err := stresslog.Read(vfs.Default, r.cfg.logName(gen, t))
		if errors.Is(err, os.ErrNotExist) {
			l, err = &stresslog.Log{}, nil // killed before the writer started
		}
		if err != nil {
			return err
		}
		if l.Torn {
			r.stats.tornLogs++
		}
		logs[t] = l
	}
	// The secondary catches up with the killed child's files before the
	// reopen changes them: it must show what the reopen recovers.
	var secondaryFound [][]byte
	if r.cfg.secondaryInstance {
		var err error
		if secondaryFound, err = r.readSecondary(); err != nil {
			return fmt.Errorf("the secondary instance after the kill: %w", err)
		}
	}
	db, err := shale.Open(r.cfg.dbDir(), r.cfg.dbOptions())
	if err != nil {
		return fmt.Errorf("the database does not open after the kill: %w", err)
	}
	found, err := readStressState(db, r.cfg.keys)
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing the database after verifying: %w", cerr)
	}
	if err != nil {
		return err
	}
	if err := r.verifyCheckpoints(gen, logs); err != nil {
		return err
	}
	if secondaryFound != nil {
		for k := range found {
			if !bytes.Equal(found[k], secondaryFound[k]) || (found[k] == nil) != (secondaryFound[k] == nil) {
				return fmt.Errorf("after the kill the secondary instance shows %s at key %s, the reopened database %s",
					describeFound(uint32(k), secondaryFound[k]), stressKey(nil, uint32(k)), describeFound(uint32(k), found[k]))
			}
		}
		r.stats.secondaryCompared++
	}
	if err := r.verifyBackups(gen, logs); err != nil {
		return err
	}
	for t, l := range logs {
		if err := r.verifyWriter(gen, t, l, found); err != nil {
			return err
		}
	}
	for t := range logs {
		if err := vfs.Default.Remove(r.cfg.logName(gen, t)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// verifyWriter checks writer t's keys and advances the model by its acked
// batches and, when found applied, its in-flight one.
func (r *stressRun) verifyWriter(gen, t int, l *stresslog.Log, found [][]byte) error {
	lo, hi := partition(r.cfg.keys, r.cfg.threads, t)
	var inFlight *stresslog.Batch
	for i := range l.Batches {
		b := &l.Batches[i]
		if !b.Acked {
			inFlight = b
			break
		}
		r.model.apply(0, batchID{gen, t, b.Seq}, b.Ops)
		r.stats.ackedBatches++
		r.stats.ackedOps += len(b.Ops)
	}
	acked := len(l.Batches)
	if inFlight != nil {
		acked--
	}
	part := r.model[lo:hi]
	withAcked, _ := part.mismatches(lo, found)
	if inFlight == nil {
		if withAcked < 0 {
			return nil
		}
		return mismatchError(part, lo, found, withAcked, t, acked, nil)
	}
	r.stats.inFlight++
	id := batchID{gen, t, inFlight.Seq}
	alt := append(stressModel(nil), part...)
	alt.apply(lo, id, inFlight.Ops)
	withInFlight, _ := alt.mismatches(lo, found)
	switch {
	case withAcked < 0 && withInFlight < 0:
		r.stats.sameBoth++
	case withAcked < 0:
		r.stats.absent++
	case withInFlight < 0:
		r.stats.applied++
		copy(part, alt)
	default:
		return explainMismatch(part, alt, lo, found, t, acked, id)
	}
	return nil
}

// explainMismatch reports a writer's keys that match neither the acked
// state (part) nor the acked state plus the in-flight batch (alt): a key
// where both differ is a lost or phantom write; otherwise the in-flight
// batch was applied in part.
func explainMismatch(part, alt stressModel, lo uint32, found [][]byte, t, acked int, inFlight batchID) error {
	onlyAcked, onlyAlt := -1, -1 // keys where only one candidate differs
	for i := range part {
		k := lo + uint32(i)
		a, b := matches(part[i], k, found[k]), matches(alt[i], k, found[k])
		switch {
		case !a && !b:
			return mismatchError(part, lo, found, int(k), t, acked, &inFlight)
		case !a && onlyAcked < 0:
			onlyAcked = int(k)
		case !b && onlyAlt < 0:
			onlyAlt = int(k)
		}
	}
	k := onlyAlt
	return fmt.Errorf("batch %s, in flight, was applied in part: key %s holds its write, but key %s (writer %d): expected %s, found %s",
		inFlight, stressKey(nil, uint32(onlyAcked)), stressKey(nil, uint32(k)), t,
		alt[k-int(lo)].describe(uint32(k)), describeFound(uint32(k), found[k]))
}

// mismatchError describes the difference at key k between found and m,
// which holds the keys from lo on.
func mismatchError(m stressModel, lo uint32, found [][]byte, k, t, acked int, inFlight *batchID) error {
	want := m[k-int(lo)]
	flight := "no batch in flight"
	if inFlight != nil {
		flight = fmt.Sprintf("batch %s in flight, which does not explain it", inFlight)
	}
	return fmt.Errorf("%s: key %s (writer %d; %d batches of this child acked, %s): expected %s, found %s",
		verdict(want, uint32(k), found[k]), stressKey(nil, uint32(k)), t, acked, flight,
		want.describe(uint32(k)), describeFound(uint32(k), found[k]))
}

// readStressState reads every key with a forward scan and checks that a
// reverse scan, Get and MultiGet agree with it. found[k] is key k's value,
// nil when absent.
func readStressState(db *shale.DB, keys int) ([][]byte, error) {
	found := make([][]byte, keys)
	var order []uint32
	it := db.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
		k, okKey := parseStressKey(it.Key())
		if !okKey || int(k) >= keys {
			it.Close()
			return nil, fmt.Errorf("the database holds key %q, which no writer wrote", truncate(it.Key()))
		}
		if n := len(order); n > 0 && order[n-1] >= k {
			it.Close()
			return nil, fmt.Errorf("the iterator returned key %s after %s", stressKey(nil, k), stressKey(nil, order[n-1]))
		}
		found[k] = append([]byte{}, it.Value()...)
		order = append(order, k)
	}
	i := len(order) - 1
	for ok := it.Last(); ok; ok = it.Prev() {
		k, _ := parseStressKey(it.Key())
		if i < 0 || order[i] != k || !bytes.Equal(found[k], it.Value()) {
			it.Close()
			return nil, fmt.Errorf("reverse iteration disagrees with forward iteration at key %q", truncate(it.Key()))
		}
		i--
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return nil, fmt.Errorf("iterating: %w", err)
	}
	if i != -1 {
		return nil, fmt.Errorf("reverse iteration saw %d keys, forward %d", len(order)-1-i, len(order))
	}
	all := make([][]byte, keys)
	for k := range all {
		all[k] = stressKey(nil, uint32(k))
		v, getErr := db.Get(all[k], nil)
		if err := agreesWithScan("Get", found, k, v, getErr); err != nil {
			return nil, err
		}
	}
	vals, errs := db.MultiGet(all, nil)
	for k := range all {
		if err := agreesWithScan("MultiGet", found, k, vals[k], errs[k]); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// agreesWithScan checks that a point read of key k (read names it: Get or
// MultiGet), which returned v and err, agrees with found[k], the scan's.
func agreesWithScan(read string, found [][]byte, k int, v []byte, err error) error {
	if errors.Is(err, shale.ErrNotFound) {
		v, err = nil, nil
	}
	key := stressKey(nil, uint32(k))
	if err != nil {
		return fmt.Errorf("%s %s: %w", read, key, err)
	}
	if !bytes.Equal(v, found[k]) || (v == nil) != (found[k] == nil) {
		return fmt.Errorf("%s %s returned %s, the iterator %s", read, key, describeFound(uint32(k), v), describeFound(uint32(k), found[k]))
	}
	return nil
}

// --- backups (issue 16, item 2) ---

// backupsDir is where the child of --backups keeps its backup directory
// (engine) and the acknowledged batch counts of its backups (acked).
func (c *stressConfig) backupsDir() string { return filepath.Join(c.dir, "backups") }

// stressBackupper adds a backup every 10 to 50 ms, until an error (or the
// kill). Before each it writes the batches each writer had acknowledged to
// acked/GEN-N.pending, and once the backup exists renames that file to
// acked/GEN-N.ID, which the parent reads back (verifyBackups).
func stressBackupper(cfg *stressConfig, db *shale.DB, gen int, acked []atomic.Uint64) error {
	rng := rand.New(rand.NewPCG(cfg.seed, uint64(gen)<<8|0xbb))
	ackedDir := filepath.Join(cfg.backupsDir(), "acked")
	if err := vfs.Default.MkdirAll(ackedDir, 0o755); err != nil {
		return err
	}
	e, err := shale.OpenBackupEngine(filepath.Join(cfg.backupsDir(), "engine"), nil)
	if err != nil {
		return fmt.Errorf("stress child %d: %w", gen, err)
	}
	defer e.Close()
	for n := 0; ; n++ {
		time.Sleep(time.Duration(10+rng.IntN(41)) * time.Millisecond)
		counts := make([]string, len(acked))
		for t := range acked {
			counts[t] = strconv.FormatUint(acked[t].Load(), 10)
		}
		pending := filepath.Join(ackedDir, fmt.Sprintf("%06d-%04d.pending", gen, n))
		if err := writeStressFile(pending, strings.Join(counts, ".")); err != nil {
			return fmt.Errorf("stress child %d: %w", gen, err)
		}
		if err := e.CreateNewBackup(db); err != nil {
			return fmt.Errorf("stress child %d: backup %d: %w", gen, n, err)
		}
		infos := e.GetBackupInfo()
		id := infos[len(infos)-1].ID
		if err := vfs.Default.Rename(pending, filepath.Join(ackedDir, fmt.Sprintf("%06d-%04d.%d", gen, n, id))); err != nil {
			return fmt.Errorf("stress child %d: %w", gen, err)
		}
	}
}

// writeStressFile writes data to name, synced.
func writeStressFile(name, data string) error {
	f, err := vfs.Default.Create(name)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(data))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// verifyBackups restores every backup child gen made, before the model
// moves past the gen's batches: each must hold, for every writer, the model
// after some prefix of its batches that includes every batch acknowledged
// before the backup began (from acked/GEN-N.ID; a backup whose file was
// still .pending at the kill takes the counts of the newest pending file).
// Opening the engine removes what an interrupted backup left. All backups
// are then deleted.
func (r *stressRun) verifyBackups(gen int, logs []*stresslog.Log) error {
	if !r.cfg.backups {
		return nil
	}
	dir := r.cfg.backupsDir()
	ackedDir := filepath.Join(dir, "acked")
	names, err := vfs.Default.List(ackedDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	slices.Sort(names)
	byID := map[shale.BackupID][]uint64{}
	var pending []uint64
	parseCounts := func(name string) ([]uint64, error) {
		data, err := os.ReadFile(filepath.Join(ackedDir, name))
		if err != nil {
			return nil, err
		}
		var counts []uint64
		for _, c := range strings.Split(string(data), ".") {
			n, err := strconv.ParseUint(c, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("backup counts %s: %q", name, data)
			}
			counts = append(counts, n)
		}
		if len(counts) != r.cfg.threads {
			return nil, fmt.Errorf("backup counts %s: %q", name, data)
		}
		return counts, nil
	}
	for _, name := range names {
		base, ext, _ := strings.Cut(name, ".")
		if !strings.HasPrefix(base, fmt.Sprintf("%06d-", gen)) {
			return fmt.Errorf("backup counts %s of another child are still there while verifying child %d", name, gen)
		}
		counts, err := parseCounts(name)
		if ext == "pending" {
			if err == nil {
				pending = counts // the newest (names sort by number)
			}
			continue // a kill may tear the newest pending file
		}
		if err != nil {
			return err
		}
		id, err := strconv.ParseUint(ext, 10, 32)
		if err != nil {
			return fmt.Errorf("backup counts %s: not a name the child gives", name)
		}
		byID[shale.BackupID(id)] = counts
	}
	e, err := shale.OpenBackupEngine(filepath.Join(dir, "engine"), nil)
	if err != nil {
		return err
	}
	defer e.Close()
	if bad := e.GetCorruptedBackups(); len(bad) > 0 {
		return fmt.Errorf("backups %v have unreadable metadata", bad)
	}
	restored := filepath.Join(dir, "restored")
	for _, bi := range e.GetBackupInfo() {
		counts, ok := byID[bi.ID]
		if !ok {
			if pending == nil {
				return fmt.Errorf("backup %d has no acknowledged counts", bi.ID)
			}
			counts, pending = pending, nil // only the newest backup can lack its file
		}
		if err := e.RestoreDBFromBackup(bi.ID, restored); err != nil {
			return err
		}
		o := r.cfg.dbOptions()
		o.CreateIfMissing = false
		db, err := shale.OpenForReadOnly(restored, o)
		if err != nil {
			return fmt.Errorf("backup %d does not open once restored: %w", bi.ID, err)
		}
		found, err := readStressState(db, r.cfg.keys)
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = r.checkCheckpointState(gen, logs, counts, found)
		}
		if err != nil {
			return fmt.Errorf("backup %d: %w", bi.ID, err)
		}
		r.stats.backups++
	}
	if err := e.PurgeOldBackups(0); err != nil {
		return err
	}
	if err := vfs.Default.RemoveAll(restored); err != nil {
		return err
	}
	return vfs.Default.RemoveAll(ackedDir)
}
