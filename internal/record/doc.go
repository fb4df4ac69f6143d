// Package record owns the block-framed record format shared by the WAL and the
// MANIFEST (the log format of LevelDB and RocksDB): writing records into it,
// reading them back, and telling a torn tail after a crash apart from damage
// in the middle of a file.
//
// It never opens, syncs or names files (callers hand it an io.Writer or
// io.Reader), and it never interprets record payloads.
//
// # Layout
//
// A file is a sequence of 32 KiB blocks; the last block may be short. A record
// is split into fragments that never cross a block boundary. Every fragment
// has a 7-byte header:
//
//	 0       4       6   7                      7+length
//	+-------+-------+---+-----------------------+
//	|  crc  |length |typ| payload (length bytes)|
//	+-------+-------+---+-----------------------+
//	 crc:    uint32 LE, masked CRC32C (Castagnoli) of typ and payload;
//	         mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8
//	 length: uint16 LE, payload bytes
//	 typ:    1 FULL, 2 FIRST, 3 MIDDLE, 4 LAST
//
// A record that fits in the rest of its block is one FULL fragment; otherwise
// it is FIRST, zero or more MIDDLE, and LAST, each filling its block to the
// end. When fewer than 7 bytes remain in a block they are zero padding and the
// next fragment starts at the next block:
//
//	block 0 (32768 bytes)                    block 1
//	+--------+------------+----------+-----+ +---------+--------+---
//	|hdr FULL| record A   |hdr FIRST | B.. | |hdr LAST | ..B    | ...
//	+--------+------------+----------+-----+ +---------+--------+---
//	                                          (or: |pad<7| at a block end)
//
// # Damage
//
// A crash can leave the end of a file torn: part of the last records written,
// or zeros from preallocation. That is normal, and the Reader reports it as
// io.EOF with TornTail saying what was dropped. Damage followed by an intact
// record is not something a crash produces, and the Reader reports it as a
// *base.CorruptionError naming the file and the offset of the bad fragment.
//
// "Intact record" means a complete record whose fragments all check out (a
// FULL fragment, or FIRST, MIDDLE..., LAST). To find one after a bad fragment
// the Reader reads the rest of the file into memory and looks: (1) along the
// fragment chain of the damaged block, following the bad fragment's length
// when it is plausible; (2) at every byte offset of the rest of the damaged
// block, so that a damaged length field still finds the records behind it;
// (3) along the fragment chain starting at every later block boundary. A
// lone intact FIRST fragment whose record is cut off counts as part of the
// torn tail, not as evidence of corruption.
//
// # Torn tail or damaged tail
//
// When nothing intact follows, the bad record ends the log, and TailDamage
// says whether a crash can explain it. What a crash in the middle of an
// append leaves of it:
//
//   - a file that ends anywhere inside the append (its size reached the disk
//     before all its data, or the write itself was cut short);
//   - or some of the append's 512-byte sectors written and the others
//     reading as zeros, in any combination. A sector is written whole or not
//     at all (one cut short fails the drive's own checksum and reads as an
//     IO error, not as other bytes); drives do not order the sectors of one
//     write, nor the page cache the 4 KiB pages of unsynced data, so a torn
//     record can have zeros at its end or in its middle. The unwritten
//     sectors read as zeros because nothing was there before: a log is only
//     ever appended to, never reused, and fresh blocks, preallocated extents
//     and holes read as zeros.
//
// A tear never changes a byte that did reach the disk: a header that is
// there is one the writer wrote. So the tail is torn when the record
// reaches past the end of the file, or when a sector of the bad fragment
// reads as zeros from the fragment's start (or the sector's, if later) to
// the sector's end — the bytes after the fragment in that sector count, as
// the next record's bytes would have been written with it. Anything else is
// damage of data written whole, and TailDamage reports it:
//
//   - a fragment whose every byte is present, with no such zeroed sector,
//     that fails its checksum (a flipped bit in a record that was synced);
//   - a header with no zeroed sector that the writer never writes: an
//     unknown type, a length past the end of the block, all zeros amid data;
//   - a header whose checksum matches the type and payload at a length that
//     differs from the stored one in one byte: its length field was damaged
//     (a flip that makes the length larger would otherwise pass for a record
//     cut off by the end of the file);
//   - valid fragments out of order.
//
// A file grown ahead of its records tears differently: appended to through
// a shared memory mapping (the WAL's wal.WriterOptions.Mmap), or extended
// with zeros before records are copied into them (wal.WriterOptions.
// ZeroFill). A crash of the process in the middle of a copy, or a power
// loss after the page cache wrote a page back while a copy into it was
// under way, leaves some of the copy's bytes and zeros after them to the
// end of the grown space, at any byte, which the rule above need not
// explain. With Reader.SetMappedWriteUnit a bad fragment is also torn when
// the file's size is a multiple of the unit the file grows by and the
// file's last non-zero byte lies in the fragment's block, after its start.
// (Copies run forward, so their tears are prefixes.)
//
// The rule cannot tell a torn record from a damaged one whose own bytes
// hold a zeroed sector (a value with a run of 512 or more zero bytes, or
// one that ends in zeros across a sector boundary at the end of the file):
// such a record is taken for torn. Everything else a single damaged byte
// can do to a complete record is reported.
package record
