package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/monotime"
	"github.com/shaledb/shale/vfs"
)

// spaceUse is the space a database takes against the data it holds.
type spaceUse struct {
	// disk is the bytes of the database's files in its directory: tables,
	// blob files, WALs, MANIFESTs, OPTIONS and CURRENT (not the info log,
	// the lock or other files).
	disk uint64
	// tables, blobs and wals are the parts of disk in tables, blob files
	// and WALs.
	tables, blobs, wals uint64
	// live is the bytes of the keys and values a full scan returns, and
	// keys their number.
	live, keys uint64
	// scan is how long the scan took.
	scan time.Duration
}

// amplification returns disk over live bytes (0 with no live bytes).
func (s spaceUse) amplification() float64 {
	if s.live == 0 {
		return 0
	}
	return float64(s.disk) / float64(s.live)
}

// measureSpace sums the sizes of the database files in dir and scans db
// (without filling the block cache) for its live bytes. The data held only
// in memtables counts as live, and its WAL as on disk: the ratio is what a
// user of the directory pays per byte of data at that moment.
func measureSpace(db *shale.DB, fs vfs.FS, dir string) (spaceUse, error) {
	var s spaceUse
	names, err := fs.List(dir)
	if err != nil {
		return s, err
	}
	for _, name := range names {
		t, _, ok := base.ParseFilename(name)
		if !ok || t == base.FileTypeInfoLog || t == base.FileTypeLock || t == base.FileTypeTemp {
			continue
		}
		fi, err := fs.Stat(fs.PathJoin(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted since the listing: obsolete
		} else if err != nil {
			return s, err
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		n := uint64(fi.Size())
		s.disk += n
		switch t {
		case base.FileTypeTable:
			s.tables += n
		case base.FileTypeBlob:
			s.blobs += n
		case base.FileTypeLog:
			s.wals += n
		}
	}
	start := monotime.Now()
	it := db.NewIterator(&shale.ReadOptions{SkipFillCache: true})
	for ok := it.First(); ok; ok = it.Next() {
		s.live += uint64(len(it.Key()) + len(it.Value()))
		s.keys++
	}
	s.scan = monotime.Since(start)
	if err := it.Close(); err != nil {
		return s, fmt.Errorf("scanning for the live bytes: %w", err)
	}
	return s, nil
}

// printSpace prints the space amplification of s, measured when says.
func printSpace(out io.Writer, when string, s spaceUse) {
	mib := func(n uint64) float64 { return float64(n) / (1 << 20) }
	fmt.Fprintf(out, "Space amplification %s: %.2f (%.1f MiB on disk: %.1f in tables, %.1f in blob files, %.1f in WALs, %.1f other; %.1f MiB of live data (keys and values) in %d keys, scanned in %s)\n",
		when, s.amplification(), mib(s.disk), mib(s.tables), mib(s.blobs), mib(s.wals), mib(s.disk-s.tables-s.blobs-s.wals),
		mib(s.live), s.keys, s.scan.Round(time.Millisecond))
}
