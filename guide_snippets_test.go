package shale_test

// The code snippets of docs/guide.md. Each function named guide... holds one
// or more snippets of the guide verbatim (indented one tab), with the
// declarations a snippet needs around it; TestGuideSnippetsCompile checks
// that every ```go block of the guide appears in one of them, so that a
// snippet that stops compiling, or drifts from this file, fails go test.
// TestGuideSnippetsRun also runs those that take a directory, a DB or
// return Options; the others use fixed paths and are only compiled.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/shaledb/shale"
)

func guideOpen() error {
	db, err := shale.Open("/var/lib/myapp/db", nil) // nil: the defaults, created if missing
	if err != nil {
		return err
	}
	defer db.Close()

	if err := db.Put([]byte("user/42"), []byte("Ada"), nil); err != nil {
		return err
	}
	v, err := db.Get([]byte("user/42"), nil)
	switch {
	case errors.Is(err, shale.ErrNotFound):
		// absent
	case err != nil:
		return err
	default:
		fmt.Printf("%s\n", v) // v is a copy: the caller owns it
	}
	return nil
}

func guideOpenOptions(dir string) (*shale.DB, error) {
	opts := &shale.Options{
		CreateIfMissing: true,      // an explicit Options is false here, as in RocksDB
		BlockCacheSize:  512 << 20, // every zero field takes its default
	}
	db, err := shale.Open(dir, opts)
	return db, err
}

func guideWrites(db *shale.DB) error {
	if err := db.Delete([]byte("user/42"), nil); err != nil {
		return err
	}
	// Every key in [start, end): one range tombstone, whatever the number of keys.
	if err := db.DeleteRange([]byte("session/"), []byte("session0"), nil); err != nil {
		return err
	}
	b := db.NewBatch()
	b.Put([]byte("account/alice"), []byte("70"))
	b.Put([]byte("account/bob"), []byte("30"))
	return db.Write(b, nil) // all or nothing, also after a crash
}

func guideDurability(db *shale.DB, key, value []byte) error {
	// On disk when Put returns: survives a power loss.
	if err := db.Put(key, value, &shale.WriteOptions{Sync: true}); err != nil {
		return err
	}
	// Handed to the OS when Put returns: survives a crash of the process;
	// a power loss can take it until a later Sync write, flush or Close.
	if err := db.Put(key, value, nil); err != nil {
		return err
	}
	// The memtable only: any crash before the next flush loses it.
	return db.Put(key, value, &shale.WriteOptions{DisableWAL: true})
}

func guideRecoveryMode(dir string) error {
	opts := &shale.Options{WALRecoveryMode: shale.PointInTimeRecovery}
	db, err := shale.Open(dir, opts)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, loss := range db.Metrics().Recovery.Losses {
		log.Printf("WAL %s: %d records dropped from offset %d (%s)",
			loss.File, loss.Records, loss.Offset, loss.Reason)
	}
	return nil
}

func guideMemory() *shale.Options {
	opts := &shale.Options{
		BlockCacheSize:            1 << 30,  // 1 GiB of uncompressed blocks (default 32 MiB)
		WriteBufferSize:           64 << 20, // per memtable (the default)
		MaxWriteBufferNumber:      4,        // memtables in memory at most (default 2)
		CacheIndexAndFilterBlocks: true,     // charge index and filter blocks to the cache
		MaxOpenFiles:              5000,     // open table files kept (default 1000)
	}
	return opts
}

func guideMemoryMetrics(db *shale.DB) {
	m := db.Metrics()
	fmt.Printf("cache %d of %d bytes, hit rate %.2f\n", m.BlockCache.Size, m.BlockCache.Capacity,
		float64(m.BlockCache.Hits)/float64(max(1, m.BlockCache.Hits+m.BlockCache.Misses)))
	fmt.Printf("memtables %d bytes, table readers %d bytes\n", m.MemtableSize, m.TableReadersMem)
}

func guideCompression() *shale.Options {
	opts := &shale.Options{
		Compression:     shale.ZstdCompression, // default snappy
		BloomBitsPerKey: 16,                    // default 10 (about 1% false positives); -1: none
		BlockSize:       16 << 10,              // default 4 KiB
	}
	return opts
}

func guideAsyncIO(db *shale.DB, keys [][]byte) error {
	ro := &shale.ReadOptions{AsyncIO: true} // a zero ReadOptions has NewReadOptions()'s defaults
	values, errs := db.MultiGet(keys, ro)
	for i := range keys {
		if errs[i] != nil && !errors.Is(errs[i], shale.ErrNotFound) {
			return errs[i]
		}
		_ = values[i]
	}

	it := db.NewIterator(&shale.ReadOptions{AsyncIO: true, UpperBound: []byte("log0")})
	for ok := it.Seek([]byte("log/")); ok; ok = it.Next() {
		_ = it.Value()
	}
	return it.Close()
}

func guideScan(db *shale.DB, snap *shale.Snapshot) error {
	for kv, err := range db.Scan(nil, []byte("user/"), []byte("user0")) {
		if err != nil {
			return err // an IO error or corruption ends the loop here
		}
		fmt.Printf("%s = %s\n", kv.Key, kv.Value) // valid in this step only: bytes.Clone to keep
	}
	for kv, err := range db.ScanReverse(&shale.ReadOptions{Snapshot: snap}, nil, nil) {
		if err != nil {
			return err
		}
		if bytes.HasPrefix(kv.Key, []byte("user/")) {
			break // closes the iterator, as the end of the loop does
		}
	}
	return nil
}

func guideDeadline(db *shale.DB, key []byte) ([]byte, error) {
	ro := &shale.ReadOptions{
		AsyncIO:   true,
		Deadline:  time.Now().Add(20 * time.Millisecond), // the whole call
		IOTimeout: 5 * time.Millisecond,                  // each file read
	}
	v, err := db.Get(key, ro)
	switch {
	case errors.Is(err, shale.ErrTimedOut):
		return nil, err // nothing is left pinned or in flight: retry, or ask a replica
	case err != nil:
		return nil, err
	}
	return v, nil
}

func guideIOUring(db *shale.DB) {
	fmt.Println("async reads by", db.Metrics().IO.AsyncReader) // "io_uring" or "portable"
}

func guideDirectIO(dir string) (*shale.DB, error) {
	opts := &shale.Options{
		UseDirectReads:                   true, // tables and blob files bypass the page cache
		UseDirectIOForFlushAndCompaction: true,
		BlockCacheSize:                   4 << 30, // the block cache is now the only cache
	}
	db, err := shale.Open(dir, opts) // fails, naming the option, where direct IO is refused
	return db, err
}

func guideBlobFiles() *shale.Options {
	opts := &shale.Options{
		EnableBlobFiles:             true,
		MinBlobSize:                 4 << 10, // values of 4 KiB and more leave the tables
		BlobCompression:             shale.ZstdCompression,
		EnableBlobGarbageCollection: true,
		// The oldest quarter of blob files is rewritten by compactions (the default).
		BlobGarbageCollectionAgeCutoff: 0.25,
	}
	return opts
}

func guideBlobMetrics(db *shale.DB) {
	b := db.Metrics().Blob
	fmt.Printf("%d blob files, %d bytes, %d garbage, %d values relocated\n",
		b.Files, b.Size, b.GarbageBytes, b.Relocated)
	s, _ := db.GetProperty("rocksdb.blob-stats")
	fmt.Print(s)
}

func guideDeleteAware() *shale.Options {
	opts := &shale.Options{
		// Compact a table once 10% of its blocks are dense in tombstones (the default).
		TombstoneDenseCompactionThreshold: 0.10,
		// RocksDB's CompactOnDeletionCollector: a window of 128 entries holding
		// 64 deletes marks the table for compaction.
		TablePropertiesCollectorFactories: []shale.TablePropertiesCollectorFactory{
			shale.NewCompactOnDeletionCollectorFactory(128, 64, 0),
		},
	}
	return opts
}

func guideDeletePersistenceOptions() *shale.Options {
	// Deleted data leaves every file within a day of the delete.
	opts := &shale.Options{DeletePersistenceThreshold: 24 * time.Hour}
	return opts
}

func guideDeletePersistence(db *shale.DB) {
	dp := db.Metrics().DeletePersistence
	fmt.Printf("oldest tombstone %v old; %d files and %d memtables past their deadline\n",
		dp.OldestTombstoneAge, dp.FilesPastTTL, dp.MemtablesPastTTL)
}

func guideSecondaryDelete(dir string) error {
	// Values start with an 8-byte big-endian creation time in unix seconds.
	opts := &shale.Options{
		CreateIfMissing: true,
		SecondaryDeleteKey: func(key, value []byte) (uint64, bool) {
			if len(value) < 8 {
				return 0, false // no attribute: never deleted by attribute
			}
			return binary.BigEndian.Uint64(value), true
		},
	}
	db, err := shale.Open(dir, opts)
	if err != nil {
		return err
	}
	defer db.Close()
	// Delete everything created before a week ago, in one synced write.
	cutoff := uint64(time.Now().Add(-7 * 24 * time.Hour).Unix())
	return db.DeleteBySecondaryRange(0, cutoff, nil)
}

// maxOperator keeps the largest operand: values and operands are decimal
// strings compared by length, then bytewise.
type maxOperator struct{}

func (maxOperator) Name() string { return "myapp.max" }

func (maxOperator) FullMerge(key, existing []byte, operands [][]byte) ([]byte, error) {
	best := existing
	for _, op := range operands {
		if best == nil || len(op) > len(best) || (len(op) == len(best) && bytes.Compare(op, best) > 0) {
			best = op
		}
	}
	return bytes.Clone(best), nil // never return a slice it was given
}

func (m maxOperator) PartialMerge(key, left, right []byte) ([]byte, bool) {
	v, err := m.FullMerge(key, left, [][]byte{right})
	return v, err == nil
}

func guideMerge(dir string) error {
	db, err := shale.Open(dir, &shale.Options{CreateIfMissing: true, MergeOperator: maxOperator{}})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Merge([]byte("high-score"), []byte("1200"), nil) // no read of the old value
}

func guideMergeCounter(db *shale.DB) error {
	// With Options.MergeOperator = shale.UInt64AddOperator:
	one := binary.LittleEndian.AppendUint64(nil, 1)
	return db.Merge([]byte("visits/home"), one, nil)
}

// dropTemporary is a compaction filter that removes the keys under "tmp/".
type dropTemporary struct{}

func (dropTemporary) Name() string { return "myapp.drop-temporary" }

func (dropTemporary) Filter(level int, key []byte, vt shale.CompactionFilterValueType,
	value func() ([]byte, error)) (shale.CompactionFilterDecision, []byte, []byte) {
	if bytes.HasPrefix(key, []byte("tmp/")) {
		return shale.DecisionRemove, nil, nil // value is never read, so no blob read
	}
	return shale.DecisionKeep, nil, nil
}

func guideCompactionFilter() *shale.Options {
	opts := &shale.Options{CompactionFilter: dropTemporary{}}
	return opts
}

func guidePrefixSeek(dir string) error {
	opts := &shale.Options{
		CreateIfMissing:              true,
		PrefixExtractor:              shale.NewFixedPrefixTransform(8), // e.g. an 8-byte user ID
		MemtablePrefixBloomSizeRatio: 0.1,
	}
	db, err := shale.Open(dir, opts)
	if err != nil {
		return err
	}
	defer db.Close()
	user := []byte("user0042")
	it := db.NewIterator(&shale.ReadOptions{PrefixSameAsStart: true})
	for ok := it.Seek(user); ok; ok = it.Next() { // stops at the prefix's end
		fmt.Printf("%s\n", it.Key())
	}
	return it.Close()
}

func guideSnapshot(db *shale.DB) error {
	snap := db.NewSnapshot()
	defer snap.Release()
	ro := &shale.ReadOptions{Snapshot: snap, LowerBound: []byte("a"), UpperBound: []byte("b")}
	it := db.NewIterator(ro)
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("%s = %s\n", it.Key(), it.Value()) // valid until the next move
	}
	return it.Close() // the iteration's error, if any
}

func guideTransaction(dir string) error {
	tdb, err := shale.OpenTransactionDB(dir, &shale.Options{CreateIfMissing: true}, nil)
	if err != nil {
		return err
	}
	defer tdb.Close()

	txn := tdb.BeginTransaction(nil, nil)
	defer txn.Rollback() // after Commit it only returns an error, ignored here

	seen, err := txn.GetForUpdate(nil, []byte("visits/alice")) // locked until the end
	if err != nil && !errors.Is(err, shale.ErrNotFound) {
		return err // shale.ErrTimedOut or shale.ErrDeadlock (errors.Is): retry
	}
	if err := txn.Put([]byte("visits/alice"), append(seen, '+')); err != nil {
		return err
	}
	return txn.Commit()
}

func guideOptimisticTransaction(db *shale.DB) error {
	for {
		txn := db.BeginOptimisticTransaction(nil, nil)
		v, err := txn.GetForUpdate(nil, []byte("counter"))
		if err != nil && !errors.Is(err, shale.ErrNotFound) {
			txn.Rollback()
			return err
		}
		if err := txn.Put([]byte("counter"), append(v, '+')); err != nil {
			txn.Rollback()
			return err
		}
		err = txn.Commit()
		if !errors.Is(err, shale.ErrBusy) {
			return err // nil, or a real error
		}
		// Someone wrote "counter" since we read it: try again.
	}
}

func guideCheckpoint(db *shale.DB) error {
	stats, err := db.CheckpointWithStats("/backups/db-2026-12-07") // must not exist
	if err != nil {
		return err
	}
	log.Printf("checkpoint: %d files, %d linked, %d bytes copied",
		stats.Files, stats.LinkedFiles, stats.CopiedBytes)
	return nil
}

func guideBackup(db *shale.DB) error {
	engine, err := shale.OpenBackupEngine("/mnt/backups/myapp", nil)
	if err != nil {
		return err
	}
	defer engine.Close()
	if err := engine.CreateNewBackup(db); err != nil { // copies only new table files
		return err
	}
	return engine.PurgeOldBackups(7) // keep the newest seven
}

func guideRestore() error {
	engine, err := shale.OpenBackupEngine("/mnt/backups/myapp", nil)
	if err != nil {
		return err
	}
	defer engine.Close()
	// With the DB closed: dbDir is made to hold exactly the backup.
	return engine.RestoreDBFromLatestBackup("/var/lib/myapp/db")
}

func guideIngest(db *shale.DB, opts *shale.Options, sortedKeys, values [][]byte) error {
	w := shale.NewSSTFileWriter(opts) // the DB's Options: its comparer, FS and table format
	if err := w.Open("/var/lib/myapp/load/part-0001.sst"); err != nil {
		return err
	}
	for i, k := range sortedKeys { // strictly increasing
		if err := w.Put(k, values[i]); err != nil {
			w.Abandon()
			return err
		}
	}
	if err := w.Finish(); err != nil {
		return err
	}
	return db.IngestExternalFile([]string{"/var/lib/myapp/load/part-0001.sst"},
		&shale.IngestExternalFileOptions{MoveFiles: true})
}

func guideSecondary() error {
	sec, err := shale.OpenAsSecondary("/var/lib/myapp/db", "/tmp/myapp-secondary", nil)
	if err != nil {
		return err
	}
	defer sec.Close()
	for range time.Tick(time.Second) {
		if err := sec.TryCatchUpWithPrimary(); err != nil {
			return err
		}
		// read from sec as from any DB
	}
	return nil
}

func guideMetrics(db *shale.DB) {
	fmt.Println(db.Metrics()) // a table: one row per level, then the counters
	if v, ok := db.GetProperty("rocksdb.estimate-pending-compaction-bytes"); ok {
		fmt.Println("pending compaction bytes:", v)
	}
	n, _ := db.GetIntProperty("rocksdb.num-files-at-level0")
	fmt.Println("L0 files:", n)
}

func guideStatistics(dir string) error {
	stats := shale.NewStatistics()
	db, err := shale.Open(dir, &shale.Options{CreateIfMissing: true, Statistics: stats})
	if err != nil {
		return err
	}
	defer db.Close()
	// ... later:
	fmt.Println("cache hits:", stats.TickerCount(shale.TickerBlockCacheHits))
	get := stats.Histogram(shale.HistogramGetMicros)
	fmt.Printf("Get p99 %.0f µs\n", get.P99)
	return nil
}

func guidePerfContext(db *shale.DB, key []byte) {
	var pc shale.PerfContext
	_, err := db.Get(key, &shale.ReadOptions{PerfContext: &pc})
	fmt.Printf("err %v: %d blocks read, %d cache hits, %d bloom probes ruled a table out\n",
		err, pc.BlockReads, pc.BlockCacheHits, pc.BloomUseful)
}

// stallLogger logs write stalls and background errors; NoopEventListener
// supplies the other methods.
type stallLogger struct{ shale.NoopEventListener }

func (stallLogger) OnStallConditionsChanged(info shale.WriteStallInfo) {
	log.Printf("writes %v (was %v): %v", info.Condition, info.Previous, info.Cause)
}

func (stallLogger) OnBackgroundError(info shale.BackgroundErrorInfo) {
	log.Printf("writes stopped by a failed %v: %v; fix it, then call DB.Resume", info.Reason, info.Err)
}

func guideEventListener() *shale.Options {
	opts := &shale.Options{EventListener: stallLogger{}}
	return opts
}

func guideSetOptions(db *shale.DB) error {
	// A bulk load: no compactions, then catch up.
	if err := db.SetOptions(map[string]string{"disable_auto_compactions": "true"}); err != nil {
		return err
	}
	// ... load ...
	if err := db.SetOptions(map[string]string{"disable_auto_compactions": "false"}); err != nil {
		return err
	}
	return db.WaitForCompact(&shale.WaitForCompactOptions{Flush: true})
}

func guideRateLimiter() *shale.Options {
	opts := &shale.Options{
		RateLimiter: shale.NewGenericRateLimiter(100 << 20), // 100 MiB/s of flush and compaction writes
	}
	return opts
}

func guideResume(db *shale.DB, key, value []byte) error {
	err := db.Put(key, value, nil)
	if errors.Is(err, shale.ErrReadOnly) {
		// A WAL write, flush or compaction failed (a full disk, say). Fix the
		// cause, then:
		return db.Resume()
	}
	return err
}

func guideCheck(dir string) error {
	report, err := shale.Check(dir, nil) // the DB need not be open; takes no lock
	if err != nil {
		return err
	}
	if !report.OK() {
		return errors.New(strings.TrimSpace(report.String()))
	}
	return nil
}
