// Package shale is an embeddable, persistent key-value store: a log-structured
// merge tree in the family of LevelDB, RocksDB and Pebble.
//
// Open a DB with Open, write with Put, Delete, SingleDelete, DeleteRange or an
// atomic Batch, read with Get, MultiGet or an Iterator, at the latest state or
// at a Snapshot. Writes go to a write-ahead log and a memtable; full memtables
// are flushed to sorted tables (SSTs) in level 0, and background compactions
// merge tables down the levels. docs/architecture.md maps the packages,
// the read, write and compaction paths and the files of a database;
// docs/guide.md, the user's guide, says how to use each feature and when to
// change its defaults.
//
// Deletes write tombstones. Compaction pushes them down to meet what they
// delete without being asked: tables dense in tombstones, and tables a
// table property collector marks (Options.TablePropertiesCollectorFactories,
// NewCompactOnDeletionCollectorFactory), are compacted as soon as a
// background slot is free, and tombstones go as soon as nothing older can
// lie below them (see Options.TombstoneDenseCompactionThreshold).
//
// Durability: a write with WriteOptions.Sync is on disk when Write returns. A
// write without Sync has been written to the WAL file (handed to the OS) when
// Write returns, so it survives a process crash; a power failure loses
// everything since the last sync. Options.WALBackgroundWrites lets unsynced
// writes return before the WAL has them (as in Pebble): faster, but a process
// crash may then lose the last few. After any crash, Open recovers a prefix of
// the acknowledged writes that includes every synced one, and never a write
// that was not made. docs/durability.md says how each promise is tested.
//
// Deleted data: with Options.DeletePersistenceThreshold, every tombstone
// reaches the bottom level within that time, so the values it deletes are
// gone from every table and WAL by then (unless a snapshot still sees them).
//
// Options: most of the options that tune flushes, compactions, write stalls
// and new tables can change while the DB runs, by their RocksDB names, with
// SetOptions (e.g. {"disable_auto_compactions": "true"} for a bulk load);
// GetOptions returns the options in force. docs/decisions.md lists which
// options can change and why the others cannot.
//
// Deletes by a secondary attribute: with Options.SecondaryDeleteKey (say, a
// timestamp read from the value), DeleteBySecondaryRange deletes every entry
// written before it whose attribute is in a range, with one synced write;
// compactions drop the tables and blocks it deletes whole without reading
// them.
//
// Bulk loading: SSTFileWriter writes sorted keys to an external table (with
// Options.EnableBlobFiles, large values to blob files beside it), and
// DB.IngestExternalFile adds such tables to the database in one atomic step,
// newer than everything written before, without going through the memtable
// and the WAL.
//
// Background work: Options.EventListener is told of flushes, compactions,
// table files, write stalls and background errors, from a goroutine of its
// own so that a slow listener never holds up writes. Options.RateLimiter
// (NewGenericRateLimiter) bounds the bytes per second flushes and
// compactions write, flushes first.
package shale
