// Package raftstore puts shale under github.com/hashicorp/raft: Store is a
// raft.LogStore and raft.StableStore on one shale DB, and FSM is a raft.FSM
// that applies put and delete commands to a shale DB and snapshots it
// through DB.Checkpoint. The replicated key-value service built on them is
// in raftstore/kvserver and raftstore/cmd/shale-server; docs/replication.md
// says how to run it and what it guarantees.
//
// # Key layout of a Store
//
// Every key starts with one prefix byte:
//
//	'l' | index (8 bytes, big-endian)   -> an encoded raft.Log
//	's' | the StableStore key's bytes    -> the value, as given
//
// Big-endian indexes sort in index order, so FirstIndex and LastIndex are a
// seek away and DeleteRange is one range tombstone over ['l'|min, 'l'|max+1).
//
// # Log entry encoding (version 1)
//
//	+---------+---------------+--------------+---------+
//	| version | index uvarint | term uvarint | type u8 |
//	+---------+---------------+--------------+---------+
//	| len(data) uvarint | data | len(extensions) uvarint | extensions |
//	+-------------------+------+-------------------------+------------+
//	| has appended_at u8 (0 or 1) | [unix nanoseconds varint] |
//	+-----------------------------+---------------------------+
//
// The version byte is 1. A decoder refuses any other version, trailing
// bytes, a length past the end, and an index that differs from the key's,
// with an error matching shale.ErrCorruption that names the index.
package raftstore
