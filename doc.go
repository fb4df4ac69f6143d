// Package shale is an embeddable, persistent key-value store: a log-structured
// merge tree in the family of LevelDB, RocksDB and Pebble.
//
// Open a DB with Open, write with Put, Delete, SingleDelete, DeleteRange or an
// atomic Batch, read with Get, MultiGet or an Iterator, at the latest state or
// at a Snapshot. Writes go to a write-ahead log and a memtable; full memtables
// are flushed to sorted tables (SSTs) in level 0, and background compactions
// merge tables down the levels. See DESIGN.md for the architecture.
//
// Durability: a write with WriteOptions.Sync is on disk when Write returns. A
// write without Sync is handed to the OS by a background WAL flusher within
// microseconds (as in Pebble), so a process crash may lose the last few
// unsynced writes and a power failure everything since the last sync. After
// any crash, Open recovers a prefix of the acknowledged writes that includes
// every synced one, and never a write that was not made.
package shale
