package shale

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/vfs"
)

// A backup directory (RocksDB's BackupEngine layout, with
// share_files_with_checksum naming):
//
//	LOCK                         held by the open BackupEngine
//	meta/<id>                    one backup's metadata (the backup exists iff this exists)
//	meta/.<id>.tmp               metadata being written
//	shared/<num>_<crc>_<size>.<ext>  tables and blob files, shared between backups
//	shared/<...>.tmp             a shared file being copied
//	private/<id>/                the backup's other files (MANIFEST, WALs, OPTIONS, CURRENT)
//
// A backup is created in this order: shared files (each copied to a .tmp
// name, synced, renamed), private files (synced), syncs of shared/,
// private/<id> and private/, then the metadata (temp, sync, rename, sync of
// meta/). Until the rename the backup is invisible; garbage collection (at
// OpenBackupEngine, at the start of CreateNewBackup and after a failed one,
// at the end of DeleteBackup and PurgeOldBackups, and in GarbageCollect)
// removes private directories, shared files and temp files no metadata
// names.
//
// The metadata is text (one line per item), ending with a CRC-32C of what
// precedes it:
//
//	shale-backup 1
//	id <id>
//	timestamp <unix seconds>
//	sequence <the DB's last seqnum>
//	copied <bytes this backup copied when created>
//	file <name in the DB> <path in the backup dir, '/'-separated> <size> <crc32c hex>
//	...
//	crc32c <hex of the CRC-32C of every byte above this line>

// BackupID numbers the backups of a backup directory, from 1 up.
type BackupID = uint32

// BackupOptions configures a BackupEngine (RocksDB's BackupEngineOptions).
// A nil *BackupOptions, and every zero field, means RocksDB's default.
type BackupOptions struct {
	// FS holds the backup directory. Default vfs.Default, the OS's.
	// CreateNewBackup reads the DB's files through the DB's Options.FS.
	FS vfs.FS
	// RestoreFS is the FS RestoreDBFromBackup writes the DB to. Default FS.
	RestoreFS vfs.FS
	// DisableShareTableFiles turns off RocksDB's share_table_files (default
	// true): each backup then holds its own copy of every table and blob
	// file in its private directory, and nothing is shared.
	DisableShareTableFiles bool
	// DisableSync turns off RocksDB's sync (default true): without it,
	// files are not synced, and a crash may lose or damage backups that
	// were reported complete.
	DisableSync bool
	// BackupRateLimit bounds the bytes per second CreateNewBackup writes
	// (RocksDB's backup_rate_limit). Default 0, unlimited; ignored when
	// BackupRateLimiter is set.
	BackupRateLimit int64
	// BackupRateLimiter meters CreateNewBackup's writes at IOPriorityLow
	// (RocksDB's backup_rate_limiter). Default nil; it may be shared with
	// Options.RateLimiter.
	BackupRateLimiter *RateLimiter
	// RestoreRateLimit bounds the bytes per second a restore writes
	// (RocksDB's restore_rate_limit). Default 0, unlimited; ignored when
	// RestoreRateLimiter is set.
	RestoreRateLimit int64
	// RestoreRateLimiter meters a restore's writes at IOPriorityLow
	// (RocksDB's restore_rate_limiter). Default nil.
	RestoreRateLimiter *RateLimiter
	// Logger receives what the engine does (RocksDB's info_log). Default
	// nil: nothing is logged.
	Logger *slog.Logger
}

// BackupInfo describes one backup (RocksDB's BackupInfo).
type BackupInfo struct {
	// ID is the backup's number.
	ID BackupID
	// Timestamp is when the backup was made, in unix seconds by the DB's
	// Options.Clock.
	Timestamp int64
	// Size is the sum of the sizes of the backup's files, shared or not.
	Size uint64
	// NumFiles is the number of files the backup restores.
	NumFiles uint32
	// SequenceNumber is the DB's last sequence number the backup holds.
	SequenceNumber uint64
	// BytesCopied is what CreateNewBackup wrote for this backup: Size less
	// the files it shared with earlier backups.
	BytesCopied uint64
}

// ErrBackupNotFound is returned (wrapped) for a backup ID that does not
// exist; it matches ErrNotFound too.
var ErrBackupNotFound = fmt.Errorf("%w: no such backup", ErrNotFound)

// BackupEngine creates, checks, restores and deletes the backups of one
// backup directory. Its methods are safe for concurrent use and run one at
// a time.
type BackupEngine struct {
	dir  string
	fs   vfs.FS
	opts BackupOptions
	log  *slog.Logger

	backupLimiter, restoreLimiter *RateLimiter

	mu     sync.Mutex
	lock   io.Closer // nil once closed
	metas  map[BackupID]*backupMeta
	broken map[BackupID]error // metadata that could not be read
}

// backupMeta is one backup's metadata.
type backupMeta struct {
	id        BackupID
	timestamp int64
	seq       uint64
	copied    uint64
	files     []backupFile
}

// backupFile is one file of a backup.
type backupFile struct {
	dbName string // the file's name in the DB directory
	path   string // its path in the backup directory, '/'-separated
	size   int64
	crc    uint32
}

func (m *backupMeta) info() BackupInfo {
	bi := BackupInfo{ID: m.id, Timestamp: m.timestamp, NumFiles: uint32(len(m.files)), SequenceNumber: m.seq, BytesCopied: m.copied}
	for _, f := range m.files {
		bi.Size += uint64(f.size)
	}
	return bi
}

const (
	backupMetaDir    = "meta"
	backupSharedDir  = "shared"
	backupPrivateDir = "private"
	backupTmpSuffix  = ".tmp"
	backupMetaMagic  = "shale-backup 1"
	// backupCopyBuffer is the size of one read and one write of a copy.
	backupCopyBuffer = 256 << 10
)

// OpenBackupEngine opens (creating it if needed) the backup directory dir
// and takes its LOCK, so that one engine at a time changes it. It reads
// every backup's metadata and removes what interrupted backups and
// deletions left behind.
func OpenBackupEngine(dir string, opts *BackupOptions) (*BackupEngine, error) {
	e := &BackupEngine{dir: dir}
	if opts != nil {
		e.opts = *opts
	}
	if e.opts.FS == nil {
		e.opts.FS = vfs.Default
	}
	if e.opts.RestoreFS == nil {
		e.opts.RestoreFS = e.opts.FS
	}
	if e.opts.BackupRateLimit < 0 {
		return nil, base.InvalidArgumentf("shale: BackupOptions.BackupRateLimit must not be negative, got %d", e.opts.BackupRateLimit)
	}
	if e.opts.RestoreRateLimit < 0 {
		return nil, base.InvalidArgumentf("shale: BackupOptions.RestoreRateLimit must not be negative, got %d", e.opts.RestoreRateLimit)
	}
	e.backupLimiter = e.opts.BackupRateLimiter
	if e.backupLimiter == nil && e.opts.BackupRateLimit > 0 {
		e.backupLimiter = NewGenericRateLimiter(e.opts.BackupRateLimit)
	}
	e.restoreLimiter = e.opts.RestoreRateLimiter
	if e.restoreLimiter == nil && e.opts.RestoreRateLimit > 0 {
		e.restoreLimiter = NewGenericRateLimiter(e.opts.RestoreRateLimit)
	}
	e.fs = e.opts.FS
	e.log = e.opts.Logger
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	for _, sub := range []string{"", backupMetaDir, backupSharedDir, backupPrivateDir} {
		if err := e.fs.MkdirAll(e.fs.PathJoin(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("shale: opening backup directory %s: %w", dir, err)
		}
	}
	lock, err := e.fs.Lock(e.fs.PathJoin(dir, base.MakeFilename(base.FileTypeLock, 0)))
	if err != nil {
		return nil, fmt.Errorf("shale: opening backup directory %s (another BackupEngine has it open?): %w", dir, err)
	}
	e.lock = lock
	if err := e.loadMetasLocked(); err != nil {
		_ = lock.Close()
		return nil, err
	}
	if err := e.garbageCollectLocked(); err != nil {
		_ = lock.Close()
		return nil, err
	}
	return e, nil
}

// Close releases the backup directory. The engine cannot be used after.
func (e *BackupEngine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lock == nil {
		return fmt.Errorf("shale: BackupEngine of %s: %w", e.dir, ErrClosed)
	}
	err := e.lock.Close()
	e.lock = nil
	return err
}

func (e *BackupEngine) checkOpenLocked() error {
	if e.lock == nil {
		return fmt.Errorf("shale: BackupEngine of %s: %w", e.dir, ErrClosed)
	}
	return nil
}

// path turns a '/'-separated path inside the backup directory into one of
// e.fs.
func (e *BackupEngine) path(rel string) string {
	return e.fs.PathJoin(append([]string{e.dir}, strings.Split(rel, "/")...)...)
}

// loadMetasLocked reads every metadata file. Unreadable ones are kept in
// e.broken: their backups are not listed, and while one exists no shared
// file is garbage collected (it might be one of theirs).
func (e *BackupEngine) loadMetasLocked() error {
	e.metas = make(map[BackupID]*backupMeta)
	e.broken = make(map[BackupID]error)
	names, err := e.fs.List(e.path(backupMetaDir))
	if err != nil {
		return fmt.Errorf("shale: listing %s: %w", e.path(backupMetaDir), err)
	}
	for _, name := range names {
		id, ok := parseBackupID(name)
		if !ok {
			continue
		}
		m, err := e.readMeta(id)
		if err != nil {
			e.broken[id] = err
			e.log.Warn("shale: backup metadata is unreadable; its backup is not listed", "id", id, "error", err)
			continue
		}
		e.metas[id] = m
	}
	return nil
}

func parseBackupID(s string) (BackupID, bool) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n == 0 || strconv.FormatUint(n, 10) != s {
		return 0, false
	}
	return BackupID(n), true
}

func metaPath(id BackupID) string { return backupMetaDir + "/" + strconv.FormatUint(uint64(id), 10) }

func privatePath(id BackupID) string {
	return backupPrivateDir + "/" + strconv.FormatUint(uint64(id), 10)
}

// readMeta reads and checks the metadata of backup id.
func (e *BackupEngine) readMeta(id BackupID) (*backupMeta, error) {
	p := e.path(metaPath(id))
	data, err := vfs.ReadFile(e.fs, p)
	if err != nil {
		return nil, fmt.Errorf("shale: reading backup metadata %s: %w", p, err)
	}
	return decodeBackupMeta(data, p, id)
}

func (m *backupMeta) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\nid %d\ntimestamp %d\nsequence %d\ncopied %d\n", backupMetaMagic, m.id, m.timestamp, m.seq, m.copied)
	for _, f := range m.files {
		fmt.Fprintf(&b, "file %s %s %d %08x\n", f.dbName, f.path, f.size, f.crc)
	}
	fmt.Fprintf(&b, "crc32c %08x\n", checksum.CRC32C(b.Bytes()))
	return b.Bytes()
}

// decodeBackupMeta parses metadata; damage is a corruption error naming
// file and the offset of the bad line.
func decodeBackupMeta(data []byte, file string, id BackupID) (*backupMeta, error) {
	corrupt := func(off int, format string, args ...any) error {
		return base.CorruptionErrorf(file, int64(off), "backup metadata: "+format, args...)
	}
	i := bytes.LastIndex(data, []byte("\ncrc32c "))
	if i < 0 || !bytes.HasSuffix(data, []byte("\n")) {
		return nil, corrupt(len(data), "no crc32c line at the end (truncated?)")
	}
	body := data[:i+1]
	want, err := strconv.ParseUint(string(data[i+len("\ncrc32c "):len(data)-1]), 16, 32)
	if err != nil {
		return nil, corrupt(i+1, "bad crc32c line")
	}
	if got := checksum.CRC32C(body); got != uint32(want) {
		return nil, corrupt(i+1, "checksum mismatch: the metadata holds %08x, its content %08x", want, got)
	}
	m := &backupMeta{}
	off := 0
	lineNo := 0
	var seenID bool
	for line := range strings.Lines(string(body)) {
		lineOff := off
		off += len(line)
		line = strings.TrimSuffix(line, "\n")
		lineNo++
		fields := strings.Split(line, " ")
		if lineNo == 1 {
			if line != backupMetaMagic {
				return nil, corrupt(lineOff, "first line %q is not %q", line, backupMetaMagic)
			}
			continue
		}
		num := func(i int, bits int) (uint64, error) {
			if i >= len(fields) {
				return 0, corrupt(lineOff, "line %q is too short", line)
			}
			n, err := strconv.ParseUint(fields[i], 10, bits)
			if err != nil {
				return 0, corrupt(lineOff, "bad number in %q", line)
			}
			return n, nil
		}
		var n uint64
		switch fields[0] {
		case "id":
			if n, err = num(1, 32); err != nil {
				return nil, err
			}
			if BackupID(n) != id {
				return nil, corrupt(lineOff, "metadata of backup %d found under the name of backup %d", n, id)
			}
			m.id, seenID = id, true
		case "timestamp":
			if n, err = num(1, 63); err != nil {
				return nil, err
			}
			m.timestamp = int64(n)
		case "sequence":
			if m.seq, err = num(1, 64); err != nil {
				return nil, err
			}
		case "copied":
			if m.copied, err = num(1, 64); err != nil {
				return nil, err
			}
		case "file":
			if len(fields) != 5 {
				return nil, corrupt(lineOff, "file line %q does not have 4 fields", line)
			}
			f := backupFile{dbName: fields[1], path: fields[2]}
			if n, err = num(3, 63); err != nil {
				return nil, err
			}
			f.size = int64(n)
			crc, err := strconv.ParseUint(fields[4], 16, 32)
			if err != nil {
				return nil, corrupt(lineOff, "bad checksum in %q", line)
			}
			f.crc = uint32(crc)
			if !validBackupFile(f, id) {
				return nil, corrupt(lineOff, "file line %q names a file outside the backup's directories or not of a database", line)
			}
			m.files = append(m.files, f)
		default:
			return nil, corrupt(lineOff, "unknown line %q", line)
		}
	}
	if !seenID {
		return nil, corrupt(0, "no id line")
	}
	return m, nil
}

// validBackupFile checks a file line of backup id: a DB file name, and a
// path that is exactly the one a backup writes for it (in shared/, named for
// its number, checksum and size; or in the backup's private directory), so
// that damaged metadata can never make a restore or a deletion reach
// elsewhere.
func validBackupFile(f backupFile, id BackupID) bool {
	t, _, ok := base.ParseFilename(f.dbName)
	if !ok || strings.ContainsAny(f.dbName, "/\\") {
		return false
	}
	switch t {
	case base.FileTypeTable, base.FileTypeBlob, base.FileTypeManifest, base.FileTypeCurrent, base.FileTypeOptions, base.FileTypeLog:
	default:
		return false
	}
	dir, name, ok := strings.Cut(f.path, "/")
	if !ok || name == "" || name == "." || name == ".." || strings.ContainsAny(name, "\\") {
		return false
	}
	switch dir {
	case backupSharedDir:
		return name == sharedName(f.dbName, f.crc, f.size)
	case backupPrivateDir:
		return name == strconv.FormatUint(uint64(id), 10)+"/"+f.dbName
	}
	return false
}

func extOf(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i:]
	}
	return ""
}

// sharedName names a table or blob file in shared/: its number, CRC-32C
// and size (share_files_with_checksum), so that files of two DBs, or of a
// DB and the DB restored from it, that share a number never collide.
func sharedName(dbName string, crc uint32, size int64) string {
	ext := extOf(dbName)
	return fmt.Sprintf("%s_%08x_%d%s", strings.TrimSuffix(dbName, ext), crc, size, ext)
}

// GetBackupInfo lists the backups, oldest first. Backups whose metadata is
// unreadable are left out (VerifyBackup reports them).
func (e *BackupEngine) GetBackupInfo() []BackupInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	infos := make([]BackupInfo, 0, len(e.metas))
	for _, m := range e.metas {
		infos = append(infos, m.info())
	}
	slices.SortFunc(infos, func(a, b BackupInfo) int { return cmp.Compare(a.ID, b.ID) })
	return infos
}

// GetCorruptedBackups lists the backups whose metadata cannot be read
// (RocksDB's GetCorruptedBackups), in ID order: GetBackupInfo leaves them
// out, VerifyBackup and RestoreDBFromBackup report the damage, and
// DeleteBackup removes them. While one exists, no shared file is garbage
// collected.
func (e *BackupEngine) GetCorruptedBackups() []BackupID {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := make([]BackupID, 0, len(e.broken))
	for id := range e.broken {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// CreateNewBackup backs db up as a new backup, whose ID is one above the
// highest so far (RocksDB's CreateNewBackup, without a flush). The backup
// holds every write acknowledged before the call: the tables and blob files
// of the current version, the MANIFEST and the WALs as far as they were
// written (the capture DB.Checkpoint makes). Tables and blob files already
// in the backup directory (same number, size and CRC-32C) are not copied
// again. On any error, or a crash, no new backup exists and earlier ones
// are untouched. db may be open read-only.
func (e *BackupEngine) CreateNewBackup(db *DB) error { return e.CreateNewBackupFlush(db, false) }

// CreateNewBackupFlush is CreateNewBackup that first flushes the memtables
// when flushBeforeBackup is set (RocksDB's flush_before_backup), so the
// backup's data is in tables, which later backups share, rather than in
// WALs, which each backup copies.
func (e *BackupEngine) CreateNewBackupFlush(db *DB, flushBeforeBackup bool) error {
	_, err := e.CreateBackup(db, &CreateBackupOptions{FlushBeforeBackup: flushBeforeBackup})
	return err
}

// CreateBackupOptions are the options of one CreateBackup (RocksDB's
// CreateBackupOptions); nil is the zero value.
type CreateBackupOptions struct {
	// FlushBeforeBackup (flush_before_backup) flushes the memtables first,
	// so that the backup's data is in tables, which later backups share.
	// Default false.
	FlushBeforeBackup bool
}

// CreateBackup is CreateNewBackup that returns the new backup's ID
// (RocksDB's CreateNewBackup with new_backup_id).
func (e *BackupEngine) CreateBackup(db *DB, o *CreateBackupOptions) (BackupID, error) {
	return e.createBackup(db, o != nil && o.FlushBeforeBackup)
}

func (e *BackupEngine) createBackup(db *DB, flushBeforeBackup bool) (BackupID, error) {
	if db == nil {
		return 0, base.InvalidArgumentf("shale: CreateNewBackup of a nil DB")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkOpenLocked(); err != nil {
		return 0, err
	}
	if err := e.garbageCollectLocked(); err != nil {
		return 0, err
	}
	id := BackupID(1)
	for have := range e.metas {
		id = max(id, have+1)
	}
	for have := range e.broken {
		id = max(id, have+1)
	}
	if id == 0 {
		return 0, fmt.Errorf("shale: backup directory %s has used every backup ID", e.dir)
	}
	c, err := db.captureForBackup(flushBeforeBackup)
	if err != nil {
		return 0, err
	}
	defer c.release()
	m := &backupMeta{id: id, timestamp: db.clock.Now().Unix(), seq: c.seq}
	if err := e.writeBackupLocked(db, c, m); err != nil {
		// The metadata may have been renamed into place before a failed
		// directory sync: remove it, or the collection would take the
		// files of a backup that lists them. What was written is then
		// unreferenced; the next collection removes it if this one cannot.
		if rmErr := e.fs.Remove(e.path(metaPath(id))); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			e.log.Warn("shale: removing the metadata of a failed backup", "id", id, "error", rmErr)
			if _, err := e.readMeta(id); err == nil {
				e.metas[id] = m // it is there and whole: it stays a backup
			} else {
				e.broken[id] = err
			}
		} else if gcErr := e.garbageCollectLocked(); gcErr != nil {
			e.log.Warn("shale: cleaning up after a failed backup", "id", id, "error", gcErr)
		}
		return 0, fmt.Errorf("shale: creating backup %d in %s: %w", id, e.dir, err)
	}
	e.metas[id] = m
	e.log.Info("shale: backup created", "id", id, "files", len(m.files), "bytes-copied", m.copied, "sequence", m.seq)
	return id, nil
}

func (e *BackupEngine) writeBackupLocked(db *DB, c *backupCapture, m *backupMeta) error {
	priv := privatePath(m.id)
	if err := e.fs.RemoveAll(e.path(priv)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := e.fs.MkdirAll(e.path(priv), 0o755); err != nil {
		return err
	}
	sync := !e.opts.DisableSync
	share := !e.opts.DisableShareTableFiles
	for _, cf := range c.files {
		src := db.fs.PathJoin(db.dirname, cf.name)
		f := backupFile{dbName: cf.name, size: cf.size}
		if cf.shareable && share {
			// A file whose CRC-32C the MANIFEST records and an earlier
			// backup holds is shared without reading it; any other is
			// read, and checked against the recorded checksum, so that a
			// damaged file is refused rather than backed up.
			if cf.hasCRC32C {
				f.crc = cf.crc32c
				f.path = backupSharedDir + "/" + sharedName(cf.name, f.crc, cf.size)
				if fi, err := e.fs.Stat(e.path(f.path)); err == nil && fi.Size() == cf.size {
					m.files = append(m.files, f)
					continue // shared with an earlier backup
				}
			}
			crc, err := crcOfFile(db.fs, src, cf.size)
			if err != nil {
				return err
			}
			if cf.hasCRC32C && crc != cf.crc32c {
				return base.CorruptionErrorf(src, 0, "the file's CRC-32C is %08x, the MANIFEST records %08x: not backed up", crc, cf.crc32c)
			}
			f.crc = crc
			f.path = backupSharedDir + "/" + sharedName(cf.name, crc, cf.size)
			dst := e.path(f.path)
			if fi, err := e.fs.Stat(dst); err == nil && fi.Size() == cf.size {
				m.files = append(m.files, f)
				continue // shared with an earlier backup
			}
			tmp := dst + backupTmpSuffix
			got, err := copyForBackup(db.fs, src, cf.src, cf.data, cf.size, e.fs, tmp, e.backupLimiter, sync)
			if err != nil {
				return err
			}
			if got != crc {
				_ = e.fs.Remove(tmp)
				return base.CorruptionErrorf(src, 0, "the file changed while it was backed up (CRC-32C %08x, then %08x)", crc, got)
			}
			if err := e.fs.Rename(tmp, dst); err != nil {
				return err
			}
		} else {
			f.path = priv + "/" + cf.name
			crc, err := copyForBackup(db.fs, src, cf.src, cf.data, cf.size, e.fs, e.path(f.path), e.backupLimiter, sync)
			if err != nil {
				return err
			}
			f.crc = crc
		}
		m.copied += uint64(cf.size)
		m.files = append(m.files, f)
	}
	if sync {
		for _, d := range []string{backupSharedDir, priv, backupPrivateDir} {
			if err := syncDir(e.fs, e.path(d)); err != nil {
				return err
			}
		}
	}
	return writeFileAtomically(e.fs, e.path(metaPath(m.id)), e.path(backupMetaDir+"/."+strconv.FormatUint(uint64(m.id), 10)+backupTmpSuffix), m.encode(), sync)
}

// syncDir is syncDirOf with the directory named in its error.
func syncDir(fs vfs.FS, dir string) error {
	if err := syncDirOf(fs, dir); err != nil {
		return fmt.Errorf("shale: syncing directory %s: %w", dir, err)
	}
	return nil
}

// writeFileAtomically writes data to tmp, syncs it, renames it to name and
// syncs the directory (without sync, only the write and the rename).
func writeFileAtomically(fs vfs.FS, name, tmp string, data []byte, sync bool) error {
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, name)
	}
	if err != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("shale: writing %s: %w", name, err)
	}
	if sync {
		return syncDir(fs, fs.PathDir(name))
	}
	return nil
}

// crcOfFile returns the CRC-32C of the first size bytes of name.
func crcOfFile(fs vfs.FS, name string, size int64) (uint32, error) {
	f, err := fs.Open(name, vfs.SequentialAccess)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, min(size, backupCopyBuffer))
	var crc uint32
	for off := int64(0); off < size; {
		n := min(int64(len(buf)), size-off)
		if _, err := readFullAt(f, buf[:n], off); err != nil {
			return 0, fmt.Errorf("shale: reading %s at offset %d: %w", name, off, err)
		}
		crc = checksum.ExtendCRC32C(crc, buf[:n])
		off += n
	}
	return crc, nil
}

// readFullAt reads len(p) bytes at off; a short file is an error.
func readFullAt(f vfs.File, p []byte, off int64) (int, error) {
	n, err := f.ReadAt(p, off)
	if n == len(p) {
		return n, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// copyForBackup writes size bytes to dst through dstFS: data when it is not
// nil, else the first size bytes of in, else of src opened through srcFS.
// The writes pass through limiter (when not nil). It returns their
// CRC-32C. With sync the file is synced before it is closed. A failed copy
// removes dst.
func copyForBackup(srcFS vfs.FS, src string, in vfs.File, data []byte, size int64, dstFS vfs.FS, dst string, limiter *RateLimiter, sync bool) (crc uint32, err error) {
	if data == nil && in == nil {
		if in, err = srcFS.Open(src, vfs.SequentialAccess); err != nil {
			return 0, err
		}
		defer in.Close()
	}
	out, err := dstFS.Create(dst)
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("shale: closing %s: %w", dst, cerr)
		}
		if err != nil {
			_ = dstFS.Remove(dst)
		}
	}()
	var buf []byte
	if data == nil {
		buf = make([]byte, min(size, backupCopyBuffer))
	}
	for off := int64(0); off < size; {
		n := min(int64(backupCopyBuffer), size-off)
		var chunk []byte
		if data != nil {
			chunk = data[off : off+n]
		} else {
			chunk = buf[:n]
			if _, err := readFullAt(in, chunk, off); err != nil {
				return 0, fmt.Errorf("shale: reading %s at offset %d: %w", src, off, err)
			}
		}
		if limiter != nil {
			limiter.Request(n, IOPriorityLow)
		}
		if _, err := out.Write(chunk); err != nil {
			return 0, fmt.Errorf("shale: writing %s: %w", dst, err)
		}
		crc = checksum.ExtendCRC32C(crc, chunk)
		off += n
	}
	if sync {
		if err := out.Sync(); err != nil {
			return 0, fmt.Errorf("shale: syncing %s: %w", dst, err)
		}
	}
	return crc, nil
}

// getMetaLocked returns backup id's metadata, or why there is none.
func (e *BackupEngine) getMetaLocked(id BackupID) (*backupMeta, error) {
	if m, ok := e.metas[id]; ok {
		return m, nil
	}
	if err, ok := e.broken[id]; ok {
		return nil, fmt.Errorf("shale: backup %d in %s: %w", id, e.dir, err)
	}
	return nil, fmt.Errorf("shale: backup %d in %s: %w", id, e.dir, ErrBackupNotFound)
}

// VerifyBackup reads every file of backup id and checks its size and
// CRC-32C against the metadata. A damaged or missing file is reported as
// an error matching ErrCorruption that names it.
func (e *BackupEngine) VerifyBackup(id BackupID) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkOpenLocked(); err != nil {
		return err
	}
	m, err := e.getMetaLocked(id)
	if err != nil {
		return err
	}
	return e.verifyLocked(m)
}

func (e *BackupEngine) verifyLocked(m *backupMeta) error {
	for _, f := range m.files {
		if err := e.verifyFile(f); err != nil {
			return fmt.Errorf("shale: backup %d in %s: %w", m.id, e.dir, err)
		}
	}
	return nil
}

func (e *BackupEngine) verifyFile(f backupFile) error {
	p := e.path(f.path)
	fi, err := e.fs.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return base.CorruptionErrorf(p, 0, "the backup's file is missing")
	}
	if err != nil {
		return err
	}
	if fi.Size() != f.size {
		return base.CorruptionErrorf(p, min(fi.Size(), f.size), "size %d, the metadata says %d", fi.Size(), f.size)
	}
	crc, err := crcOfFile(e.fs, p, f.size)
	if err != nil {
		return err
	}
	if crc != f.crc {
		return base.CorruptionErrorf(p, 0, "CRC-32C %08x, the metadata says %08x", crc, f.crc)
	}
	return nil
}

// RestoreDBFromLatestBackup restores the backup with the highest ID into
// dbDir (see RestoreDBFromBackup).
func (e *BackupEngine) RestoreDBFromLatestBackup(dbDir string) error {
	e.mu.Lock()
	var latest BackupID
	for id := range e.metas {
		latest = max(latest, id)
	}
	e.mu.Unlock()
	if latest == 0 {
		return fmt.Errorf("shale: backup directory %s holds no backup: %w", e.dir, ErrBackupNotFound)
	}
	return e.RestoreDBFromBackup(latest, dbDir)
}

// RestoreDBFromBackup makes dbDir hold the database of backup id. It first
// verifies every file of the backup, so a damaged backup changes nothing in
// dbDir. It then takes dbDir's LOCK (failing while a DB is open there),
// removes the database files already in dbDir (CURRENT first; other files
// are left alone), copies the backup's files, checking each CRC-32C again,
// and writes CURRENT last: an interrupted restore leaves a directory that
// holds no openable database, never a mix. It fails if the backup's files
// change during the restore.
func (e *BackupEngine) RestoreDBFromBackup(id BackupID, dbDir string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkOpenLocked(); err != nil {
		return err
	}
	m, err := e.getMetaLocked(id)
	if err != nil {
		return err
	}
	if err := e.verifyLocked(m); err != nil {
		return fmt.Errorf("shale: not restoring into %s: %w", dbDir, err)
	}
	if err := e.restoreLocked(m, dbDir); err != nil {
		return fmt.Errorf("shale: restoring backup %d into %s: %w", id, dbDir, err)
	}
	e.log.Info("shale: backup restored", "id", id, "dir", dbDir)
	return nil
}

func (e *BackupEngine) restoreLocked(m *backupMeta, dbDir string) error {
	fs := e.opts.RestoreFS
	sync := !e.opts.DisableSync
	if err := fs.MkdirAll(dbDir, 0o755); err != nil {
		return err
	}
	lock, err := fs.Lock(fs.PathJoin(dbDir, base.MakeFilename(base.FileTypeLock, 0)))
	if err != nil {
		return fmt.Errorf("taking the directory's lock (is a DB open there?): %w", err)
	}
	defer lock.Close()
	if err := removeDBFiles(fs, dbDir, sync); err != nil {
		return err
	}
	var current *backupFile
	var written []string
	fail := func(err error) error {
		for _, p := range written {
			_ = fs.Remove(p)
		}
		return err
	}
	for i := range m.files {
		f := &m.files[i]
		if f.dbName == base.MakeFilename(base.FileTypeCurrent, 0) {
			current = f
			continue
		}
		dst := fs.PathJoin(dbDir, f.dbName)
		written = append(written, dst)
		if err := e.restoreFile(*f, fs, dst, sync); err != nil {
			return fail(err)
		}
	}
	if current == nil {
		return fail(base.CorruptionErrorf(e.path(metaPath(m.id)), 0, "backup metadata lists no CURRENT"))
	}
	if sync {
		if err := syncDir(fs, dbDir); err != nil {
			return fail(err)
		}
	}
	// CURRENT last, through a temp file: the restored DB opens only once
	// everything it names is in place.
	// The temp file is named as CURRENT's temp files are (NNNNNN.dbtmp, the
	// MANIFEST's number), so that Open removes one a crash leaves.
	var tmpNum base.FileNum
	for _, f := range m.files {
		if t, num, _ := base.ParseFilename(f.dbName); t == base.FileTypeManifest {
			tmpNum = max(tmpNum, num)
		}
	}
	tmp := fs.PathJoin(dbDir, base.MakeFilename(base.FileTypeTemp, tmpNum))
	written = append(written, tmp)
	if err := e.restoreFile(*current, fs, tmp, sync); err != nil {
		return fail(err)
	}
	if err := fs.Rename(tmp, fs.PathJoin(dbDir, current.dbName)); err != nil {
		return fail(err)
	}
	if sync {
		if err := syncDir(fs, dbDir); err != nil {
			return err
		}
	}
	return nil
}

// restoreFile copies one backup file to dst, checking its size and
// CRC-32C.
func (e *BackupEngine) restoreFile(f backupFile, fs vfs.FS, dst string, sync bool) error {
	src := e.path(f.path)
	fi, err := e.fs.Stat(src)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return base.CorruptionErrorf(src, 0, "the backup's file is missing")
		}
		return err
	}
	if fi.Size() != f.size {
		return base.CorruptionErrorf(src, min(fi.Size(), f.size), "size %d, the metadata says %d", fi.Size(), f.size)
	}
	crc, err := copyForBackup(e.fs, src, nil, nil, f.size, fs, dst, e.restoreLimiter, sync)
	if err != nil {
		return err
	}
	if crc != f.crc {
		_ = fs.Remove(dst)
		return base.CorruptionErrorf(src, 0, "CRC-32C %08x, the metadata says %08x", crc, f.crc)
	}
	return nil
}

// removeDBFiles removes the database files in dir (RocksDB's restore does
// the same): CURRENT first, so that an interruption never leaves the old
// database openable with some of its files gone, then the tables, blob
// files, WALs, MANIFESTs, OPTIONS and temp files. LOCK, LOG files and files
// of other names stay.
func removeDBFiles(fs vfs.FS, dir string, sync bool) error {
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	currentName := base.MakeFilename(base.FileTypeCurrent, 0)
	if slices.Contains(names, currentName) {
		if err := fs.Remove(fs.PathJoin(dir, currentName)); err != nil {
			return fmt.Errorf("removing the old %s: %w", currentName, err)
		}
		if sync {
			if err := syncDir(fs, dir); err != nil {
				return err
			}
		}
	}
	for _, name := range names {
		t, _, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		switch t {
		case base.FileTypeTable, base.FileTypeBlob, base.FileTypeLog, base.FileTypeManifest, base.FileTypeOptions, base.FileTypeTemp:
			if err := fs.Remove(fs.PathJoin(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("removing the old %s: %w", name, err)
			}
		}
	}
	return nil
}

// DeleteBackup deletes backup id, and the shared files no other backup
// uses. Its metadata goes first, so an interrupted deletion leaves either
// the whole backup or garbage that the next collection removes.
func (e *BackupEngine) DeleteBackup(id BackupID) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkOpenLocked(); err != nil {
		return err
	}
	_, ok := e.metas[id]
	if _, bad := e.broken[id]; !ok && !bad {
		return fmt.Errorf("shale: deleting backup %d in %s: %w", id, e.dir, ErrBackupNotFound)
	}
	if err := e.deleteLocked(id); err != nil {
		return err
	}
	return e.garbageCollectLocked()
}

func (e *BackupEngine) deleteLocked(id BackupID) error {
	if err := e.fs.Remove(e.path(metaPath(id))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("shale: deleting backup %d in %s: %w", id, e.dir, err)
	}
	delete(e.metas, id)
	delete(e.broken, id)
	if !e.opts.DisableSync {
		if err := syncDir(e.fs, e.path(backupMetaDir)); err != nil {
			return err
		}
	}
	e.log.Info("shale: backup deleted", "id", id)
	return nil
}

// PurgeOldBackups deletes the oldest backups until at most keep remain,
// and the shared files no remaining backup uses.
func (e *BackupEngine) PurgeOldBackups(keep int) error {
	if keep < 0 {
		return base.InvalidArgumentf("shale: PurgeOldBackups needs keep >= 0, got %d", keep)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkOpenLocked(); err != nil {
		return err
	}
	ids := make([]BackupID, 0, len(e.metas))
	for id := range e.metas {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for len(ids) > keep {
		if err := e.deleteLocked(ids[0]); err != nil {
			return err
		}
		ids = ids[1:]
	}
	return e.garbageCollectLocked()
}

// GarbageCollect removes what no backup uses: private directories and
// shared files of interrupted backups and deletions, and temp files
// (RocksDB's GarbageCollect). OpenBackupEngine, CreateNewBackup,
// DeleteBackup and PurgeOldBackups do it themselves.
func (e *BackupEngine) GarbageCollect() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkOpenLocked(); err != nil {
		return err
	}
	return e.garbageCollectLocked()
}

func (e *BackupEngine) garbageCollectLocked() error {
	var errs []error
	remove := func(rel string, all bool) {
		p := e.path(rel)
		var err error
		if all {
			err = e.fs.RemoveAll(p)
		} else {
			err = e.fs.Remove(p)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			return
		}
		e.log.Info("shale: backup garbage removed", "path", rel)
	}
	// Temp metadata.
	names, err := e.fs.List(e.path(backupMetaDir))
	if err != nil {
		return fmt.Errorf("shale: listing %s: %w", e.path(backupMetaDir), err)
	}
	for _, n := range names {
		if strings.HasSuffix(n, backupTmpSuffix) {
			remove(backupMetaDir+"/"+n, false)
		}
	}
	// Private directories of no backup.
	names, err = e.fs.List(e.path(backupPrivateDir))
	if err != nil {
		return fmt.Errorf("shale: listing %s: %w", e.path(backupPrivateDir), err)
	}
	for _, n := range names {
		id, ok := parseBackupID(n)
		if _, live := e.metas[id]; live && ok {
			continue
		}
		if _, bad := e.broken[id]; bad && ok {
			continue
		}
		remove(backupPrivateDir+"/"+n, true)
	}
	// Shared files no backup names; none while some metadata cannot be read.
	names, err = e.fs.List(e.path(backupSharedDir))
	if err != nil {
		return fmt.Errorf("shale: listing %s: %w", e.path(backupSharedDir), err)
	}
	used := make(map[string]bool)
	for _, m := range e.metas {
		for _, f := range m.files {
			used[f.path] = true
		}
	}
	for _, n := range names {
		rel := backupSharedDir + "/" + n
		if used[rel] || (len(e.broken) > 0 && !strings.HasSuffix(n, backupTmpSuffix)) {
			continue
		}
		remove(rel, false)
	}
	if len(errs) > 0 {
		return fmt.Errorf("shale: collecting garbage in backup directory %s: %w", e.dir, errors.Join(errs...))
	}
	return nil
}
