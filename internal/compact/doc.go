// Package compact owns compaction: choosing what to compact (leveled
// picking with RocksDB's dynamic level sizes, level scores, files marked for
// compaction, manual ranges) and running the compaction iterator that turns
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
//   - A compaction picked because a file is marked for compaction (Reason
//     "marked") is never a trivial move: the point is to rewrite the file.
//   - A range tombstone's oldest-stripe seqnum is elided whenever
//     ElideRangeTombstone allows it, even if newer stripes of the same
//     fragment survive: the points it covers in this compaction are dropped
//     with it, and nothing older exists below.
//   - After a SingleDelete is dropped together with the Set it deletes, the
//     next older version of the key in the same stripe decides that stripe
//     (under the SingleDelete contract it is another SingleDelete or nothing).
package compact
