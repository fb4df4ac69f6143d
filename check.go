package shale

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shaledb/shale/blob"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
)

// VerifyChecksum reads every block of every live table from disk (not from
// the block cache) and checks its checksum and structure, as RocksDB's
// DB::VerifyChecksum; it also checks each table's size against the
// MANIFEST, and the whole-file checksum of every live blob file. Every
// damaged file is reported: the result matches
// ErrCorruption and names each file and offset. Memtables and the WAL are
// not checked (see Check).
func (d *DB) VerifyChecksum() error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	rs := d.loadReadState()
	if rs == nil {
		return ErrClosed
	}
	defer rs.unref()
	var errs []error
	for _, files := range rs.version.Levels {
		for _, f := range files {
			t, err := d.fileCache.findTable(f.FileNum)
			if err == nil {
				err = d.checkTableSize(f)
				if err == nil {
					err = t.reader.VerifyChecksums()
				}
				t.release()
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, b := range rs.version.BlobFiles {
		f, err := d.fileCache.findBlob(b.FileNum)
		if err == nil {
			err = f.blobReader.VerifyFileChecksum()
			f.release()
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkTableSize compares a live table's size on disk with the MANIFEST's.
func (d *DB) checkTableSize(f *manifest.FileMetadata) error {
	name := d.tablePath(f.FileNum)
	fi, err := d.fs.Stat(name)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w (%w)", base.CorruptionErrorf(name, 0, "live table is missing"), err)
	}
	if err != nil {
		return fmt.Errorf("shale: checking %s: %w", name, err)
	}
	if uint64(fi.Size()) != f.Size {
		return base.CorruptionErrorf(name, fi.Size(), "table is %d bytes, the MANIFEST says %d", fi.Size(), f.Size)
	}
	return nil
}

// checkLiveTables is Options.ParanoidChecks at Open: every live table must
// exist, have the size the MANIFEST records and open (footer, index,
// filter, properties and range-del blocks pass their checksums), and every
// live blob file must exist, have the size the MANIFEST records and open
// (header and footer).
func (d *DB) checkLiveTables() error {
	v := d.versions.Current()
	defer v.Unref()
	for _, b := range v.BlobFiles {
		if err := d.checkBlobFileSize(b); err != nil {
			return err
		}
		f, err := d.fileCache.findBlob(b.FileNum)
		if err != nil {
			return err
		}
		f.release()
	}
	for _, files := range v.Levels {
		for _, f := range files {
			if err := d.checkTableSize(f); err != nil {
				return err
			}
			t, err := d.fileCache.findTable(f.FileNum)
			if err != nil {
				return err
			}
			t.release()
		}
	}
	return nil
}

// checkBlobFileSize compares a live blob file's size on disk with the
// MANIFEST's.
func (d *DB) checkBlobFileSize(b *manifest.BlobFileMetadata) error {
	name := d.blobPath(b.FileNum)
	fi, err := d.fs.Stat(name)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w (%w)", base.CorruptionErrorf(name, 0, "live blob file is missing"), err)
	}
	if err != nil {
		return fmt.Errorf("shale: checking %s: %w", name, err)
	}
	if uint64(fi.Size()) != b.Size {
		return base.CorruptionErrorf(name, fi.Size(), "blob file is %d bytes, the MANIFEST says %d", fi.Size(), b.Size)
	}
	return nil
}

// verifyNewBlobFiles is Options.ParanoidChecks for the blob files a flush
// or compaction wrote: each is read back whole from the file system and
// its checksum verified before it is installed.
func (d *DB) verifyNewBlobFiles(metas []*manifest.BlobFileMetadata) error {
	for _, m := range metas {
		if err := d.checkBlobFileSize(m); err != nil {
			return err
		}
		name := d.blobPath(m.FileNum)
		f, err := d.fs.Open(name, vfs.SequentialAccess)
		if err != nil {
			return fmt.Errorf("shale: opening %s: %w", name, err)
		}
		r, err := blob.NewReader(f, blob.ReaderOptions{FileNum: m.FileNum, FileName: name})
		if err != nil {
			return err
		}
		if err := errors.Join(r.VerifyFileChecksum(), r.Close()); err != nil {
			return err
		}
	}
	return nil
}

// verifyNewTables is Options.ParanoidChecks after a flush or compaction:
// each output is read back from the file system, block by block, before
// it is installed.
func (d *DB) verifyNewTables(metas []*manifest.FileMetadata) error {
	for _, m := range metas {
		if err := d.checkTableSize(m); err != nil {
			return err
		}
		if _, err := verifyTableFile(d.fs, d.tablePath(m.FileNum), d.cmp); err != nil {
			return err
		}
	}
	return nil
}

// verifyTableFile opens the table at name without a cache, verifies every
// block and returns its properties.
func verifyTableFile(fs vfs.FS, name string, cmp *base.Comparer) (*sstable.Properties, error) {
	f, err := fs.Open(name, vfs.SequentialAccess)
	if err != nil {
		return nil, fmt.Errorf("shale: opening %s: %w", name, err)
	}
	r, err := sstable.NewReader(f, sstable.ReaderOptions{Comparer: cmp, FileName: name})
	if err != nil {
		return nil, err
	}
	props := r.Properties()
	return props, errors.Join(r.VerifyChecksums(), r.Close())
}

// checkRecordedCounts compares what the MANIFEST records of a table with
// the table's properties. Tables recorded before the raw sizes were (a
// zero RawKeySize) are not compared: the MANIFEST holds only some counts
// for them. It returns a description of the table for the report.
func checkRecordedCounts(path string, m *manifest.FileMetadata, p *sstable.Properties) (string, error) {
	if m.RawKeySize != 0 {
		type pair struct {
			name          string
			recorded, got uint64
		}
		for _, c := range []pair{
			{"entries", m.NumEntries, p.NumEntries},
			{"deletions", m.NumDeletions, p.NumDeletions},
			{"range deletions", m.NumRangeDeletions, p.NumRangeDeletions},
			{"raw key bytes", m.RawKeySize, p.RawKeySize},
			{"raw value bytes", m.RawValueSize, p.RawValueSize},
			{"data blocks", m.NumDataBlocks, p.NumDataBlocks},
			{"tombstone-dense data blocks", m.NumTombstoneDenseBlocks, p.NumTombstoneDenseBlocks},
		} {
			if c.recorded != c.got {
				return "", base.CorruptionErrorf(path, 0, "the MANIFEST records %d %s, the table's properties %d", c.recorded, c.name, c.got)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d entries", p.NumEntries)
	if p.NumDeletions > 0 {
		fmt.Fprintf(&b, ", %d tombstones", p.NumDeletions)
	}
	if p.NumTombstoneDenseBlocks > 0 {
		fmt.Fprintf(&b, " (%d of %d data blocks tombstone-dense)", p.NumTombstoneDenseBlocks, p.NumDataBlocks)
	}
	if p.NumDeletions > 0 {
		// From the MANIFEST: delete persistence deadlines count from it.
		fmt.Fprintf(&b, ", %s", tombstoneDate(m.OldestTombstoneTime))
	}
	if m.MarkedForCompaction {
		b.WriteString(", marked for compaction")
	}
	if sr := m.Secondary; sr.Known {
		if err := checkSecondaryProps(path, sr, p.User); err != nil {
			return "", err
		}
		if sr.Count > 0 {
			fmt.Fprintf(&b, ", secondary attributes [%d, %d] in %d entries", sr.Min, sr.Max, sr.Count)
		} else {
			b.WriteString(", no secondary attributes")
		}
	}
	if m.SecondaryApplied > 0 {
		fmt.Fprintf(&b, ", secondary tombstones applied to @%d", m.SecondaryApplied)
	}
	if len(m.BlobFiles) > 0 {
		nums := make([]string, len(m.BlobFiles))
		for i, n := range m.BlobFiles {
			nums[i] = n.String()
		}
		fmt.Fprintf(&b, ", references blob files %s", strings.Join(nums, " "))
	}
	if n := len(p.User); n > 0 {
		fmt.Fprintf(&b, ", %d user properties", n)
	}
	return b.String(), nil
}

// checkSecondaryProps compares the secondary attribute range the MANIFEST
// records of a table with the table's properties.
func checkSecondaryProps(path string, sr manifest.SecondaryRange, user map[string]string) error {
	got := manifest.SecondaryRange{Known: true}
	if user[propSecondaryCount] != "" {
		for _, f := range []struct {
			name string
			dst  *uint64
		}{{propSecondaryMin, &got.Min}, {propSecondaryMax, &got.Max}, {propSecondaryCount, &got.Count}} {
			v, err := strconv.ParseUint(user[f.name], 10, 64)
			if err != nil {
				return base.CorruptionErrorf(path, 0, "table property %s is %q, not a number", f.name, user[f.name])
			}
			*f.dst = v
		}
	}
	if got != sr {
		return base.CorruptionErrorf(path, 0, "the MANIFEST records secondary attributes [%d, %d] in %d entries, the table's properties [%d, %d] in %d",
			sr.Min, sr.Max, sr.Count, got.Min, got.Max, got.Count)
	}
	return nil
}

// CheckStatus is the verdict of Check on one file.
type CheckStatus int

const (
	// CheckOK: every checksum and structure check passed.
	CheckOK CheckStatus = iota
	// CheckRecoverable: the file ends in a torn tail, as a crash leaves
	// it; Open drops the tail (under the default WALRecoveryMode) and loses
	// nothing that was synced.
	CheckRecoverable
	// CheckDamaged: the file is damaged or missing; Open or reads fail.
	CheckDamaged
	// CheckSkipped: not checked (obsolete, temporary, LOG, LOCK, unknown).
	CheckSkipped
)

// String returns the status as the report prints it.
func (s CheckStatus) String() string {
	switch s {
	case CheckOK:
		return "ok"
	case CheckRecoverable:
		return "recoverable"
	case CheckDamaged:
		return "DAMAGED"
	case CheckSkipped:
		return "skipped"
	}
	return fmt.Sprintf("CheckStatus(%d)", int(s))
}

// CheckedFile is what Check found for one file of the database directory.
type CheckedFile struct {
	// Name is the file's base name.
	Name string
	// Kind is "CURRENT", "MANIFEST", "WAL", "table", "OPTIONS" or "other".
	Kind string
	// Size is the file's size in bytes (0 when missing).
	Size   int64
	Status CheckStatus
	// Err is the damage (Status CheckDamaged or CheckRecoverable); it
	// matches ErrCorruption and names the file and offset, except for a
	// missing file or a comparer mismatch.
	Err error
	// Detail summarizes what was checked, or why the file was skipped.
	Detail string
}

// CheckReport is the result of Check: one entry per file, in the order
// CURRENT, MANIFEST, tables, blob files, WALs, OPTIONS, others.
type CheckReport struct {
	Dir   string
	Files []CheckedFile
}

// OK reports whether no file is damaged (torn tails are recoverable and
// count as OK).
func (r *CheckReport) OK() bool {
	for _, f := range r.Files {
		if f.Status == CheckDamaged {
			return false
		}
	}
	return true
}

// String renders the report for people: one line per file and a summary.
func (r *CheckReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "database %s\n", r.Dir)
	counts := map[CheckStatus]int{}
	for _, f := range r.Files {
		counts[f.Status]++
		fmt.Fprintf(&b, "  %-11s %-24s %10d  %s", f.Status, f.Name, f.Size, f.Kind)
		if f.Detail != "" {
			fmt.Fprintf(&b, ": %s", f.Detail)
		}
		b.WriteByte('\n')
		if f.Err != nil {
			for _, line := range strings.Split(f.Err.Error(), "\n") {
				fmt.Fprintf(&b, "      %s\n", line)
			}
		}
	}
	verdict := "no damage found"
	if !r.OK() {
		verdict = "DAMAGE FOUND"
	}
	fmt.Fprintf(&b, "%s: %d files ok, %d recoverable, %d damaged, %d skipped\n", verdict,
		counts[CheckOK], counts[CheckRecoverable], counts[CheckDamaged], counts[CheckSkipped])
	return b.String()
}

// Check verifies the database in dir without opening it, so it works on a
// database that does not open: it reads CURRENT, every record of the live
// MANIFEST (replaying it into a version), every block of every live table,
// every live blob file (its whole-file checksum, and the value behind every
// blob index of every live table, so that a dangling or damaged reference
// is found), every record of every WAL not yet in tables, and parses the
// OPTIONS files. The whole-file checksum the MANIFEST records for a live
// table or blob file (Options.FileChecksumGenFactory) is compared with the
// file's bytes: a mismatch damages the file; a file recorded without one
// (an older database, or NoFileChecksums) is reported as unchecked in its
// Detail, as is one whose function o's factory does not make.
// o supplies the FS, Comparer, WALRecoveryMode and FileChecksumGenFactory
// (nil: defaults).
// Open never reads OPTIONS files (it writes a fresh one), so damage there
// does not stop Open; Check reports it.
//
// Check never modifies anything: it opens files read-only and takes no
// lock, so it can run beside a process that has the database open (whose
// lock is exclusive). Against a live database a WAL being written may show
// a recoverable torn tail, and files a compaction replaced may be reported
// missing; check a closed database for a definitive answer. The error is
// non-nil only when the check could not run (dir unreadable or holding no
// database); damage is in the report.
func Check(dir string, o *Options) (*CheckReport, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	opts.EnsureDefaults()
	c := &checker{fs: opts.FS, dir: dir, opts: &opts, rep: &CheckReport{Dir: dir}}
	names, err := c.fs.List(dir)
	if err != nil {
		return nil, fmt.Errorf("shale: check: listing %s: %w", dir, err)
	}
	slices.Sort(names)
	var manifests, tables, blobs, logs, options []base.FileNum
	hasCurrent := false
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		switch {
		case !ok:
			c.add(CheckedFile{Name: name, Kind: "other", Status: CheckSkipped, Detail: "not a shale file"})
		case t == base.FileTypeCurrent:
			hasCurrent = true
		case t == base.FileTypeManifest:
			manifests = append(manifests, num)
		case t == base.FileTypeTable:
			tables = append(tables, num)
		case t == base.FileTypeBlob:
			blobs = append(blobs, num)
		case t == base.FileTypeLog:
			logs = append(logs, num)
		case t == base.FileTypeOptions:
			options = append(options, num)
		case t == base.FileTypeTemp:
			c.add(CheckedFile{Name: name, Kind: "other", Status: CheckSkipped, Detail: "temporary file (Open removes it)"})
		default:
			c.add(CheckedFile{Name: name, Kind: "other", Status: CheckSkipped})
		}
	}
	if !hasCurrent && len(manifests) == 0 {
		return nil, base.InvalidArgumentf("shale: check: %s holds no database (no CURRENT and no MANIFEST)", dir)
	}
	others := c.rep.Files
	c.rep.Files = nil

	v, logNum := c.checkCurrentAndManifest(hasCurrent, manifests)
	c.checkTables(v, tables)
	c.checkBlobFiles(v, blobs)
	c.checkWALs(logs, logNum, v != nil)
	for _, num := range options {
		c.checkOptions(base.MakeFilename(base.FileTypeOptions, num))
	}
	c.rep.Files = append(c.rep.Files, others...)
	return c.rep, nil
}

// checker carries the state of one Check.
type checker struct {
	fs   vfs.FS
	dir  string
	opts *Options
	rep  *CheckReport
}

func (c *checker) add(f CheckedFile) { c.rep.Files = append(c.rep.Files, f) }

func (c *checker) path(name string) string { return c.fs.PathJoin(c.dir, name) }

// readAll reads a whole file; size is -1 when it cannot be opened.
func (c *checker) readAll(name string) ([]byte, int64, error) {
	f, err := c.fs.Open(c.path(name))
	if err != nil {
		return nil, -1, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, -1, err
	}
	if size > 1<<20 {
		return nil, size, fmt.Errorf("%d bytes is too large", size)
	}
	b := make([]byte, size)
	if n, err := f.ReadAt(b, 0); n < len(b) {
		return nil, size, fmt.Errorf("reading: %w", err)
	}
	return b, size, nil
}

// checkCurrentAndManifest checks CURRENT and replays the MANIFEST it names
// (or, when CURRENT is unusable, the newest MANIFEST). It returns the
// replayed version (nil if the MANIFEST is unusable) and its log number.
func (c *checker) checkCurrentAndManifest(hasCurrent bool, manifests []base.FileNum) (*manifest.Version, base.FileNum) {
	curName := base.MakeFilename(base.FileTypeCurrent, 0)
	cur := CheckedFile{Name: curName, Kind: "CURRENT"}
	live, liveOK := base.FileNum(0), false
	switch data, size, err := c.readAll(curName); {
	case !hasCurrent:
		cur.Status, cur.Err = CheckDamaged, base.CorruptionErrorf(c.path(curName), 0, "CURRENT is missing")
	case err != nil:
		cur.Size, cur.Status = max(size, 0), CheckDamaged
		cur.Err = fmt.Errorf("%w (%w)", base.CorruptionErrorf(c.path(curName), 0, "CURRENT cannot be read"), err)
	default:
		cur.Size = size
		num, err := manifest.ParseCurrent(data, c.path(curName))
		name := base.MakeFilename(base.FileTypeManifest, num)
		switch {
		case err != nil:
			cur.Status, cur.Err = CheckDamaged, err
		case !slices.Contains(manifests, num):
			cur.Status = CheckDamaged
			cur.Err = base.CorruptionErrorf(c.path(curName), 0, "CURRENT names %s, which does not exist", name)
		default:
			live, liveOK = num, true
			cur.Detail = "names " + name
		}
	}
	if !liveOK && len(manifests) > 0 {
		live = manifests[len(manifests)-1]
		cur.Detail = fmt.Sprintf("unusable; checked the newest MANIFEST, %s, instead", base.MakeFilename(base.FileTypeManifest, live))
	}
	c.add(cur)
	var v *manifest.Version
	var logNum base.FileNum
	for _, num := range manifests {
		name := base.MakeFilename(base.FileTypeManifest, num)
		if num != live {
			c.add(CheckedFile{Name: name, Kind: "MANIFEST", Size: c.size(name), Status: CheckSkipped, Detail: "not the live MANIFEST (Open removes it)"})
			continue
		}
		var cf CheckedFile
		cf, v, logNum = c.replayManifest(name)
		c.add(cf)
	}
	return v, logNum
}

func (c *checker) size(name string) int64 {
	if fi, err := c.fs.Stat(c.path(name)); err == nil {
		return fi.Size()
	}
	return 0
}

// replayManifest replays a MANIFEST as Open does (manifest.Replay).
func (c *checker) replayManifest(name string) (CheckedFile, *manifest.Version, base.FileNum) {
	path := c.path(name)
	cf := CheckedFile{Name: name, Kind: "MANIFEST", Size: c.size(name), Status: CheckDamaged}
	f, err := c.fs.Open(path)
	if err != nil {
		cf.Err = fmt.Errorf("shale: opening %s: %w", path, err)
		return cf, nil, 0
	}
	defer f.Close()
	res, err := manifest.Replay(io.NewSectionReader(f, 0, math.MaxInt64), path, c.opts.Comparer, c.opts.NumLevels)
	if res.Version == nil {
		cf.Err = err
		return cf, nil, 0
	}
	nTables := 0
	for _, files := range res.Version.Levels {
		nTables += len(files)
	}
	cf.Detail = fmt.Sprintf("live; %d records, %d live tables, log number %s", res.Records, nTables, res.LogNum)
	if ts := res.Version.SecondaryTombstones; len(ts) > 0 {
		parts := make([]string, len(ts))
		for i, t := range ts {
			parts[i] = t.String()
		}
		cf.Detail += fmt.Sprintf(", %d live secondary tombstones %s", len(ts), strings.Join(parts, " "))
	}
	if n, total, garbage := res.Version.BlobStats(); n > 0 {
		parts := make([]string, n)
		for i, b := range res.Version.BlobFiles {
			parts[i] = b.String()
		}
		cf.Detail += fmt.Sprintf(", %d live blob files of %d bytes, %d of them garbage (number:blobs/bytes) %s",
			n, total, garbage, strings.Join(parts, " "))
	}
	switch {
	case err != nil:
		// A damaged last record: the records before it still say which
		// files are live.
		cf.Err = err
	case res.TornBytes > 0:
		cf.Status = CheckRecoverable
		cf.Err = base.CorruptionErrorf(path, res.TornOffset, "torn tail of %d bytes, as a crash in the middle of an append leaves it (Open drops it)", res.TornBytes)
	default:
		cf.Status = CheckOK
	}
	return cf, res.Version, res.LogNum
}

// checkTables verifies every live table of v, and every table when v is
// unknown; other tables are obsolete.
func (c *checker) checkTables(v *manifest.Version, present []base.FileNum) {
	type liveTable struct {
		level int
		meta  *manifest.FileMetadata
	}
	live := map[base.FileNum]liveTable{}
	var nums []base.FileNum
	if v != nil {
		for level, files := range v.Levels {
			for _, f := range files {
				live[f.FileNum] = liveTable{level, f}
				nums = append(nums, f.FileNum)
			}
		}
	}
	for _, n := range present {
		if _, ok := live[n]; !ok {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	for _, num := range nums {
		name := base.MakeFilename(base.FileTypeTable, num)
		path := c.path(name)
		cf := CheckedFile{Name: name, Kind: "table"}
		lt, isLive := live[num]
		if v != nil && !isLive {
			cf.Size, cf.Status, cf.Detail = c.size(name), CheckSkipped, "not live (Open removes it)"
			c.add(cf)
			continue
		}
		fi, err := c.fs.Stat(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			cf.Status = CheckDamaged
			cf.Err = fmt.Errorf("%w (%w)", base.CorruptionErrorf(path, 0, "live table in L%d is missing", lt.level), err)
		case err != nil:
			cf.Status, cf.Err = CheckDamaged, fmt.Errorf("shale: checking %s: %w", path, err)
		default:
			cf.Size = fi.Size()
			if isLive && uint64(fi.Size()) != lt.meta.Size {
				cf.Status = CheckDamaged
				cf.Err = base.CorruptionErrorf(path, fi.Size(), "table is %d bytes, the MANIFEST says %d", fi.Size(), lt.meta.Size)
			} else {
				// The whole-file checksum first: a flipped byte is then
				// reported as a mismatch whatever block it is in.
				var sumDetail string
				var sumErr error
				if isLive {
					sumDetail, sumErr = c.checkFileChecksum(path, lt.meta.FileChecksumFuncName, lt.meta.FileChecksum)
				}
				if props, err := verifyTableFile(c.fs, path, c.opts.Comparer); err != nil || sumErr != nil {
					cf.Status, cf.Err = CheckDamaged, errors.Join(sumErr, err)
				} else if isLive {
					if desc, err := checkRecordedCounts(path, lt.meta, props); err != nil {
						cf.Status, cf.Err = CheckDamaged, err
					} else {
						cf.Detail = fmt.Sprintf("L%d, %s, %s", lt.level, desc, sumDetail)
					}
				}
			}
		}
		if cf.Status == CheckOK {
			if !isLive {
				cf.Detail = "blocks ok; liveness unknown (MANIFEST unusable)"
			}
		}
		c.add(cf)
	}
}

// tombstoneDate describes a table's oldest tombstone time, from the
// MANIFEST.
func tombstoneDate(unixNanos uint64) string {
	if unixNanos == 0 || unixNanos > math.MaxInt64 {
		return "the oldest written at a time not recorded"
	}
	return "the oldest written " + time.Unix(0, int64(unixNanos)).UTC().Format(time.RFC3339Nano)
}

// walCheck is what reading one WAL found.
type walCheck struct {
	cf     CheckedFile
	writes bool  // holds a batch with entries
	torn   int64 // bytes of torn tail
	tornAt int64
}

// checkWALs reads every WAL at or above the MANIFEST's log number (all of
// them when the MANIFEST is unusable). A torn tail is recoverable only in
// the newest WAL holding writes, as Open judges it.
func (c *checker) checkWALs(logs []base.FileNum, logNum base.FileNum, haveManifest bool) {
	var checks []*walCheck
	for _, num := range logs {
		name := base.MakeFilename(base.FileTypeLog, num)
		if haveManifest && num < logNum {
			c.add(CheckedFile{Name: name, Kind: "WAL", Size: c.size(name), Status: CheckSkipped, Detail: "obsolete: its writes are in tables"})
			continue
		}
		checks = append(checks, c.readWAL(name))
	}
	for i, w := range checks {
		if w.torn > 0 && w.cf.Status == CheckOK {
			w.cf.Status = CheckRecoverable
			w.cf.Err = base.CorruptionErrorf(c.path(w.cf.Name), w.tornAt,
				"torn tail of %d bytes, as a crash in the middle of an append leaves it, never synced (Open drops it)", w.torn)
			for _, later := range checks[i+1:] {
				if later.writes {
					w.cf.Status = CheckDamaged
					w.cf.Err = base.CorruptionErrorf(c.path(w.cf.Name), w.tornAt,
						"WAL ends early (torn tail of %d bytes) but the newer WAL %s holds writes: data between them is lost", w.torn, later.cf.Name)
					break
				}
			}
		}
		c.add(w.cf)
	}
}

// readWAL replays a WAL as Open does (wal.Replay, walBatch) under the
// default WALRecoveryMode, or AbsoluteConsistency when the options ask for
// it: damage is DAMAGED whatever the mode, since the writes it held are
// lost even where a mode opens without them.
func (c *checker) readWAL(name string) *walCheck {
	path := c.path(name)
	w := &walCheck{cf: CheckedFile{Name: name, Kind: "WAL", Size: c.size(name)}}
	mode := TolerateCorruptedTailRecords
	if c.opts.WALRecoveryMode == AbsoluteConsistency {
		mode = AbsoluteConsistency
	}
	entries := 0
	// Values written to blob files at commit are read back as Open does
	// (walBlobResolver); one that does not read back ends the WAL there.
	blobs := newWALBlobResolver(c.fs, c.dir)
	defer blobs.close()
	lostAt := int64(-1)
	var lostErr error
	res, err := wal.Replay(c.fs, path, mode, func(rec []byte, off int64) error {
		r, err := walBatch(path, off, rec)
		if err != nil || r.count == 0 {
			return err // Open skips an empty batch unread
		}
		if _, _, err := blobs.resolve(path, off, rec); errors.Is(err, errBlobValueLost) {
			lostAt, lostErr = off, err
			return errStopReplay
		} else if err != nil {
			return err
		}
		for {
			_, _, _, ok, malformed := r.next()
			if malformed {
				return base.CorruptionErrorf(path, off, "malformed batch at seqnum %d", r.seq)
			}
			if !ok {
				break
			}
		}
		entries += int(r.count)
		w.writes = true
		return nil
	})
	read := fmt.Sprintf("%d records, %d entries", res.Records, entries)
	if err == errStopReplay {
		err = nil
		if mode == AbsoluteConsistency {
			err = lostErr
		}
		res.Damaged = true
		res.TornTailBytes = max(w.cf.Size-lostAt, 0)
		res.DroppedOffset = lostAt
	}
	switch {
	case err == nil:
		w.cf.Detail = read
		w.torn, w.tornAt = res.TornTailBytes, res.DroppedOffset
	case res.TailCorrupt: // the last record is damaged
		w.cf.Status, w.cf.Err, w.cf.Detail = CheckDamaged, err, read+" before the damage"
	case res.Damaged: // a torn tail, which AbsoluteConsistency refuses
		w.cf.Status, w.cf.Err, w.cf.Detail = CheckDamaged, err, read
	default: // damage followed by intact records, a bad batch, an unreadable file
		w.cf.Status, w.cf.Err = CheckDamaged, err
	}
	return w
}

// checkOptions parses an OPTIONS file line by line, so a damaged line is
// reported with its offset, validates the options it holds, and checks the
// checksum line that ends it (which finds a changed digit that still parses). Open never
// reads OPTIONS files (it writes a fresh one), so damage here only matters
// to tools that read them.
func (c *checker) checkOptions(name string) {
	path := c.path(name)
	cf := CheckedFile{Name: name, Kind: "OPTIONS"}
	data, size, err := c.readAll(name)
	cf.Size = max(size, 0)
	if err != nil {
		cf.Status, cf.Err = CheckDamaged, fmt.Errorf("%w (%w)", base.CorruptionErrorf(path, 0, "OPTIONS cannot be read"), err)
		c.add(cf)
		return
	}
	var all []byte
	checkOpts := c.opts // the options Check was given
	for off := 0; off < len(data); {
		line, _, _ := bytes.Cut(data[off:], []byte{'\n'})
		lineOff := off
		off += len(line) + 1
		trimmed := strings.TrimSpace(string(line))
		if k, v, ok := strings.Cut(trimmed, "="); ok && k == "comparator" && v == c.opts.Comparer.Name {
			continue // a custom comparer is the program's; ParseOptionsFile knows only the default
		}
		if k, v, ok := strings.Cut(trimmed, "="); ok && k == "prefix_extractor" && v == prefixExtractorName(checkOpts.PrefixExtractor) {
			continue // so is a custom prefix extractor; ParseOptionsFile knows only RocksDB's
		}
		if _, err := ParseOptionsFile(line); err != nil {
			cf.Status, cf.Err = CheckDamaged, fmt.Errorf("%w: %w", base.CorruptionErrorf(path, int64(lineOff), "bad OPTIONS line"), err)
			c.add(cf)
			return
		}
		all = append(append(all, line...), '\n')
	}
	o, err := ParseOptionsFile(all)
	if err == nil {
		o.FS = c.fs
		err = o.EnsureDefaults().Validate()
	}
	if err != nil {
		cf.Status, cf.Err = CheckDamaged, fmt.Errorf("%w: %w", base.CorruptionErrorf(path, 0, "OPTIONS do not validate"), err)
	} else if !bytes.HasPrefix(data, []byte("# shale options")) {
		cf.Status, cf.Err = CheckDamaged, base.CorruptionErrorf(path, 0, "OPTIONS file does not start with its header")
	} else if err := verifyOptionsChecksum(data); err != nil {
		cf.Status, cf.Err = CheckDamaged, fmt.Errorf("%w: %w", base.CorruptionErrorf(path, 0, "OPTIONS checksum"), err)
	} else {
		cf.Detail = "checksum matches, parses and validates"
	}
	c.add(cf)
}

// checkBlobFiles verifies every live blob file of v (size, footer, the
// whole-file checksum, the count the MANIFEST records), then reads the
// value behind every blob index of every live table: a value that does not
// read back damages its blob file, an index into a blob file that is not
// live, or that its table does not record, damages the table. Blob files
// not in v are obsolete; without a usable MANIFEST (v nil) each is only
// checked by itself.
func (c *checker) checkBlobFiles(v *manifest.Version, present []base.FileNum) {
	readers := map[base.FileNum]*blob.Reader{}
	defer func() {
		for _, r := range readers {
			_ = r.Close()
		}
	}()
	entry := map[base.FileNum]int{} // blob file -> its index in c.rep.Files
	nums := slices.Clone(present)
	if v != nil {
		for _, b := range v.BlobFiles {
			if !slices.Contains(nums, b.FileNum) {
				nums = append(nums, b.FileNum)
			}
		}
	}
	slices.Sort(nums)
	for _, num := range nums {
		name := base.MakeFilename(base.FileTypeBlob, num)
		path := c.path(name)
		cf := CheckedFile{Name: name, Kind: "blob file"}
		var meta *manifest.BlobFileMetadata
		if v != nil {
			if meta = v.BlobFile(num); meta == nil {
				cf.Size, cf.Status, cf.Detail = c.size(name), CheckSkipped, "not live (Open removes it)"
				c.add(cf)
				continue
			}
		}
		r, err := c.openBlob(path, num)
		// The whole-file checksum the MANIFEST records (not one of the
		// blob format's older kind, which the footer holds).
		var sumDetail string
		var sumErr error
		if meta != nil && !legacyBlobChecksum(meta.ChecksumMethod) && !errors.Is(err, os.ErrNotExist) {
			sumDetail, sumErr = c.checkFileChecksum(path, meta.ChecksumMethod, meta.ChecksumValue)
		}
		switch {
		case errors.Is(err, os.ErrNotExist):
			cf.Status = CheckDamaged
			cf.Err = fmt.Errorf("%w (%w)", base.CorruptionErrorf(path, 0, "live blob file is missing"), err)
		case err != nil:
			cf.Size, cf.Status, cf.Err = c.size(name), CheckDamaged, errors.Join(sumErr, err)
		default:
			p := r.Properties()
			cf.Size = int64(p.Size)
			if meta != nil && legacyBlobChecksum(meta.ChecksumMethod) {
				sumErr = verifyLegacyBlobChecksum(path, meta, p.FileChecksum, func() error { return nil })
				sumDetail = "file checksum " + meta.ChecksumMethod + " (the blob format's, before the footer) matches"
			}
			if err := r.VerifyFileChecksum(); err != nil || sumErr != nil {
				cf.Status, cf.Err = CheckDamaged, errors.Join(sumErr, err)
			} else if meta != nil && (p.Size != meta.Size || p.Count != meta.TotalCount) {
				cf.Status = CheckDamaged
				cf.Err = base.CorruptionErrorf(path, 0, "blob file of %d bytes with %d blobs, the MANIFEST says %d bytes and %d blobs",
					p.Size, p.Count, meta.Size, meta.TotalCount)
			} else {
				cf.Status = CheckOK
				readers[num] = r
				if meta != nil {
					cf.Detail = fmt.Sprintf("%d blobs of %d bytes, %s", meta.TotalCount, meta.TotalBytes, sumDetail)
					if meta.GarbageCount > 0 {
						cf.Detail += fmt.Sprintf(", garbage %d/%d", meta.GarbageCount, meta.GarbageBytes)
						if t := meta.OldestGarbageTime; t != 0 && t <= math.MaxInt64 {
							// Delete persistence rewrites the file by a
							// deadline counted from it.
							cf.Detail += ", the oldest dated " + time.Unix(0, int64(t)).UTC().Format(time.RFC3339Nano)
						}
					}
				} else {
					cf.Detail = "checksums ok; liveness unknown (MANIFEST unusable)"
				}
			}
			if cf.Status != CheckOK {
				_ = r.Close()
			}
		}
		entry[num] = len(c.rep.Files)
		c.add(cf)
	}
	if v == nil {
		return
	}
	// The references: each live table's blob indexes, read back.
	for _, files := range v.Levels {
		for _, f := range files {
			if len(f.BlobFiles) == 0 {
				continue
			}
			tpath := c.path(base.MakeFilename(base.FileTypeTable, f.FileNum))
			tf, err := c.fs.Open(tpath, vfs.SequentialAccess)
			if err != nil {
				continue // checkTables reported it
			}
			tr, err := sstable.NewReader(tf, sstable.ReaderOptions{Comparer: c.opts.Comparer, FileName: tpath})
			if err != nil {
				continue // checkTables reported it
			}
			var blamed base.FileNum
			n, err := checkTableBlobRefs(tpath, tr, f.BlobFiles, func(num base.FileNum) (*blob.Reader, error) {
				blamed = num
				if v.BlobFile(num) == nil {
					return nil, base.CorruptionErrorf(tpath, 0, "blob index into blob file %s, which is not live (dangling reference)", num)
				}
				// nil when the file is damaged or missing: its entry says so.
				return readers[num], nil
			})
			_ = tr.Close()
			if err == nil {
				if i, ok := c.findEntry(base.MakeFilename(base.FileTypeTable, f.FileNum)); ok && c.rep.Files[i].Status == CheckOK {
					c.rep.Files[i].Detail += fmt.Sprintf(", %d blob indexes read back", n)
				}
				continue
			}
			// A value that does not read back from a live blob file damages
			// that file; anything else is the table's.
			// (A damaged block of the table itself names the table.)
			i, ok := entry[blamed]
			if !ok || v.BlobFile(blamed) == nil || readers[blamed] == nil ||
				!strings.Contains(err.Error(), base.MakeFilename(base.FileTypeBlob, blamed)) {
				i, ok = c.findEntry(base.MakeFilename(base.FileTypeTable, f.FileNum))
			}
			if ok {
				e := &c.rep.Files[i]
				e.Status, e.Err = CheckDamaged, errors.Join(e.Err, err)
			}
		}
	}
}

// checkFileChecksum compares the whole-file checksum the MANIFEST records
// for the file at path (funcName, sum) with the file's bytes, through the
// factory of Check's options (the built-in CRC-32C is always at hand). It
// returns what the report says of it; a mismatch is an error naming the
// file. A file recorded without a checksum, or with one by a function the
// factory does not make, is unchecked, not damaged.
func (c *checker) checkFileChecksum(path, funcName string, sum []byte) (string, error) {
	checked, err := verifyRecordedChecksum(c.fs, path, c.opts.FileChecksumGenFactory, funcName, sum)
	switch {
	case errors.Is(err, errFileChecksumUnverifiable):
		return fmt.Sprintf("file checksum by %s unchecked (Options.FileChecksumGenFactory does not make it)", funcName), nil
	case err != nil:
		return "", err
	case !checked:
		return "no file checksum recorded (unchecked)", nil
	}
	return fmt.Sprintf("file checksum %s %x matches", funcName, sum), nil
}

// findEntry returns the index of the report's entry for name.
func (c *checker) findEntry(name string) (int, bool) {
	for i := range c.rep.Files {
		if c.rep.Files[i].Name == name {
			return i, true
		}
	}
	return 0, false
}

// openBlob opens the blob file at path without a cache.
func (c *checker) openBlob(path string, num base.FileNum) (*blob.Reader, error) {
	f, err := c.fs.Open(path, vfs.SequentialAccess)
	if err != nil {
		return nil, err
	}
	return blob.NewReader(f, blob.ReaderOptions{FileNum: num, FileName: path})
}
