package shale

import (
	"fmt"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// backupCapture is the set of a DB's files one backup copies: the
// checkpoint's capture of the live files (captureLiveFiles: the tables and
// blob files of one version, with obsolete-file deletion held, the MANIFEST
// prefix that replays to it, the WALs up to their written size, OPTIONS),
// and a CURRENT naming the MANIFEST.
type backupCapture struct {
	files []capturedFile
	// seq is the DB's last visible seqnum when the capture began: the
	// backup holds every write up to it (and maybe later ones).
	seq uint64
	// release ends the capture (files closed, deletions resumed).
	release func()
}

// capturedFile is one file of a capture, named as in the DB directory.
type capturedFile struct {
	name string
	// shareable files (tables and blob files) are immutable and go to the
	// backup's shared directory.
	shareable bool
	// size is what belongs to the capture: the file's first size bytes.
	size int64
	// src, when not nil, is the file opened at the capture (MANIFEST,
	// WALs, OPTIONS): it is read through it even if the DB has removed the
	// file since. Shareable files are opened by name.
	src vfs.File
	// data, when not nil, is the file's content (CURRENT).
	data []byte
	// crc32c is the whole-file CRC-32C the MANIFEST records for a table or
	// blob file, when hasCRC32C (liveFile.crc32c).
	crc32c    uint32
	hasCRC32C bool
}

// captureForBackup captures db's live files for a backup, after a flush of
// the memtables when flush is set (a read-only DB is never flushed: its
// WALs are copied).
func (d *DB) captureForBackup(flush bool) (*backupCapture, error) {
	if d.closed.Load() {
		return nil, ErrClosed
	}
	if flush && !d.readOnly {
		if err := d.Flush(); err != nil {
			return nil, fmt.Errorf("shale: backup: flushing the memtables: %w", err)
		}
	}
	seq := d.visibleSeq.Load()
	set, err := d.captureLiveFiles()
	if err != nil {
		return nil, err
	}
	c := &backupCapture{seq: seq, release: set.release}
	for _, f := range set.files {
		c.files = append(c.files, capturedFile{name: f.name, shareable: f.immutable, size: f.size, src: f.src,
			crc32c: f.crc32c, hasCRC32C: f.hasCRC32C})
	}
	current := []byte(base.MakeFilename(base.FileTypeManifest, set.manifestNum) + "\n")
	c.files = append(c.files, capturedFile{name: base.MakeFilename(base.FileTypeCurrent, 0), size: int64(len(current)), data: current})
	return c, nil
}
