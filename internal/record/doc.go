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
package record
