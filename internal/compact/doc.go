// Package compact owns compaction: choosing what to compact (leveled
// picking with RocksDB's dynamic level sizes, level scores compensated for
// tombstones, files marked for compaction, tombstone-dense files, last-level
// rewrites that drop tombstones, manual ranges, and first of all files past
// their delete persistence deadline, Lethe's FADE: see Deadlines) and running
// the compaction iterator that turns
// merged input entries into output files (snapshot-aware dropping of
// shadowed versions, range-tombstone application, tombstone elision, and
// cutting outputs at target sizes and grandparent boundaries). Flushes use the
// same runner.
//
// It never does IO and never opens, reads or writes SSTs itself: the DB
// hands it versions (internal/manifest), a merged input iterator and an
// OutputWriter factory wrapping sstable.Writer. It never mutates a Version or
// a FileMetadata: the caller, holding the DB mutex, sets Compacting on the
// inputs of a picked Compaction and installs the resulting version edit.
//
// # Snapshot stripes
//
// With live snapshots s1 < s2 < ... < sn, an entry at seqnum q belongs to the
// stripe of the smallest si >= q, or to the "latest" stripe above sn. A
// reader at any snapshot sees either all or none of a stripe, so Run keeps
// exactly the newest version of each user key per stripe (and the newest
// range-tombstone seqnum per stripe and fragment); everything else is
// invisible to every reader and dropped.
//
// # Decisions not spelled out by RocksDB
//
//   - L0 is scored by the files and bytes not already being compacted, as
//     RocksDB does; an L0->base compaction takes the transitive closure of
//     overlapping L0 files, so no L0 file it leaves behind overlaps it, and
//     only one L0 compaction runs at a time.
//   - A compaction picked for tombstones (Reason "marked",
//     "tombstone-density" or "elision-only") is never a trivial move: the
//     point is to rewrite the file, and its tombstones are dropped where
//     nothing older lies below.
//   - Compactions for tombstones are not left for when nothing else is
//     pending, as RocksDB and Pebble leave them: they go first while their
//     file's level scores below 1, and alternate with compactions by score
//     otherwise (PickAuto). An L0 compaction at the slowdown trigger still
//     goes first.
//   - A tombstone is charged one deleted entry of the version's average key
//     and value size (the averages over every file that recorded its raw
//     sizes, at the version's compression ratio). Pebble charges the same
//     per tombstone, and RocksDB averages over the version too, but charges
//     only the deletions in excess of a file's other entries.
//   - A last-level file is rewritten in place for its tombstones only when
//     every one of them is older than the oldest snapshot, so the rewrite
//     drops them all and its output is no candidate again; RocksDB never
//     picks a marked file of the last level.
//   - A range tombstone's oldest-stripe seqnum is elided whenever
//     ElideRangeTombstone allows it, even if newer stripes of the same
//     fragment survive: the points it covers in this compaction are dropped
//     with it, and nothing older exists below.
//   - A file past its delete persistence deadline above the bottom level
//     compacts into the next level of the chain (a trivial move when it
//     overlaps nothing there); one of the bottom level is rewritten in place,
//     and only when every entry of it is older than the oldest snapshot, so
//     the rewrite is sure to drop its tombstones and cannot repeat.
//   - A blob file past its delete persistence deadline (Deadlines.Blob:
//     its oldest garbage, as the DB dates it, is nine tenths of the
//     threshold old) competes with those files by date; a table referencing
//     it is compacted as for forced blob GC (ReasonBlobExpired, never a
//     trivial move), and the DB relocates the file's values it reads.
//   - After a SingleDelete is dropped together with the Set it deletes, the
//     next older version of the key in the same stripe decides that stripe
//     (under the SingleDelete contract it is another SingleDelete or nothing).
package compact
