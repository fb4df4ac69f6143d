package shale

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/shaledb/shale/blob"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
)

// LostDirName is the subdirectory of a database directory into which
// RepairDB moves the files it could not use (RocksDB's "lost").
const LostDirName = "lost"

// LostFile is a file RepairDB moved to the lost/ directory, and why.
type LostFile struct {
	// Name is the file's name (now under lost/).
	Name string
	// Reason says why it could not be kept, e.g. the corruption error
	// naming the file and offset.
	Reason string
}

// RepairReport says what RepairDB kept and what it could not read.
type RepairReport struct {
	// Manifest is the name of the MANIFEST RepairDB wrote.
	Manifest string
	// Tables and BlobFiles are the files kept (registered in the new
	// MANIFEST), by name; tables are all placed in L0.
	Tables, BlobFiles []string
	// WALs are the WAL files replayed into tables.
	WALs []string
	// WALLosses are the records the WAL replay dropped (damaged records
	// are skipped: the repair opens with SkipAnyCorruptedRecords).
	WALLosses []WALLoss
	// Lost are the files moved to lost/: tables and blob files that failed
	// to read, tables referencing a blob file that is missing or unread-
	// able, blob files no kept table references, and the old MANIFESTs.
	Lost []LostFile
	// Compacted is set when the kept tables' seqnum ranges interleave over
	// overlapping keys, so RepairDB compacted everything to restore the
	// newest-first order reads rely on.
	Compacted bool
}

// String formats the report for people, one file per line.
func (r *RepairReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "wrote %s: %d table(s), %d blob file(s) kept, %d WAL(s) replayed\n", r.Manifest, len(r.Tables), len(r.BlobFiles), len(r.WALs))
	for _, t := range r.Tables {
		fmt.Fprintf(&b, "kept table %s\n", t)
	}
	for _, t := range r.BlobFiles {
		fmt.Fprintf(&b, "kept blob file %s\n", t)
	}
	for _, w := range r.WALs {
		fmt.Fprintf(&b, "replayed WAL %s\n", w)
	}
	for _, l := range r.WALLosses {
		fmt.Fprintf(&b, "LOST %d WAL record(s), %d bytes, of %s from offset %d: %s\n", l.Records, l.Bytes, l.File, l.Offset, l.Reason)
	}
	for _, l := range r.Lost {
		fmt.Fprintf(&b, "moved %s to %s/: %s\n", l.Name, LostDirName, l.Reason)
	}
	if r.Compacted {
		b.WriteString("compacted every table: their seqnum ranges interleaved\n")
	}
	return b.String()
}

// RepairDB rebuilds the MANIFEST of the database in dir from the tables,
// blob files and WALs it finds, when the MANIFEST or CURRENT is lost or
// damaged (RocksDB's RepairDB); see Repair.
func RepairDB(dir string, opts *Options) error {
	_, err := Repair(dir, opts)
	return err
}

// Repair is RepairDB returning what it kept and what it could not read.
// It takes the directory's lock, then:
//
//   - reads every blob file whole (header, every record, footer and
//     whole-file checksum) and every table whole (VerifyChecksums, then
//     every entry for its key range, seqnums and blob references);
//   - moves to lost/ each table or blob file that is damaged (an error
//     matching ErrCorruption; any other error, such as an IO error, ends
//     the repair before anything is written or moved), each table
//     referencing a blob file that is missing or failed, each blob file no
//     kept table references, and the old MANIFESTs;
//   - writes a new MANIFEST holding every kept table in L0 (newest first by
//     largest seqnum) and every kept blob file, the last seqnum the largest
//     found and the log number the oldest WAL's, then points CURRENT at it
//     atomically; before that, a WAL holding damaged records or batches
//     the kept tables already hold (seqnum at most theirs: what an
//     interrupted recovery or repair flushed) is rewritten without them
//     and moved to lost/, since a batch replayed twice would apply its
//     merge operands twice (filterWAL);
//   - opens the database, which replays the WALs and flushes them to
//     tables; when kept tables overlap in keys
//     with interleaving seqnum ranges (tables that came from different
//     levels), compacts everything, since L0 reads take the first table
//     holding a key as the newest;
//   - closes it.
//
// A blob file's garbage is rebuilt as its records less the distinct
// records the kept tables reference. A table's compaction hints (tombstone times, file ages, secondary ranges) restart
// from unknown. opts are the options the database is opened with (nil:
// defaults); its Comparer must be the one the tables were written with.
func Repair(dir string, opts *Options) (*RepairReport, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	fs := o.FS
	if _, err := fs.Stat(dir); err != nil {
		return nil, fmt.Errorf("shale: repairing %s: %w", dir, err)
	}
	lock, err := LockDirectory(dir, fs)
	if err != nil {
		return nil, fmt.Errorf("shale: repairing %s: %w", dir, err)
	}
	defer lock.Close()
	rep := &RepairReport{}
	rp := &repairer{fs: o.FS, dir: dir, o: &o, rep: rep}
	if err := rp.rebuild(); err != nil {
		return rep, err
	}
	// Open replays the WALs from logNum on into tables.
	o.Lock = lock
	o.CreateIfMissing = false
	o.ErrorIfExists = false
	o.WALRecoveryMode = SkipAnyCorruptedRecords
	db, err := Open(dir, &o)
	if err != nil {
		return rep, fmt.Errorf("shale: opening %s after writing %s: %w", dir, rep.Manifest, err)
	}
	rep.WALLosses = append(rep.WALLosses, db.Metrics().Recovery.Losses...)
	err = db.Flush()
	if err == nil && rp.interleaved {
		rep.Compacted = true
		err = db.CompactRange(nil, nil)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return rep, err
}

// repairer holds the state of one Repair.
type repairer struct {
	fs  vfs.FS
	dir string
	o   *Options
	rep *RepairReport
	// interleaved is set when kept tables overlap in keys with seqnum
	// ranges that interleave.
	interleaved bool
	// sawMerge is set when a table or WAL holds a merge operand.
	sawMerge bool
	// blobs reads the values of the WALs' blob indexes (filterWAL).
	blobs *walBlobResolver
	// globalSeqs holds the global seqnum (0 for tables the DB wrote, and
	// for ingested ones placed under everything) of every table an edit of
	// the MANIFESTs found still adds (recoverGlobalSeqNums): an ingested
	// table's entries are stored at seqnum 0 and read at this one.
	globalSeqs map[base.FileNum]base.SeqNum
}

// recoverGlobalSeqNums reads every MANIFEST in the directory as far as its
// records are intact and collects the global seqnum of each table an edit
// added. Damage only ends what a MANIFEST yields: this is the one
// place that knows at which seqnum an ingested table's entries read.
func (rp *repairer) recoverGlobalSeqNums(manifests []base.FileNum) {
	rp.globalSeqs = map[base.FileNum]base.SeqNum{}
	for _, num := range manifests {
		name := rp.path(base.MakeFilename(base.FileTypeManifest, num))
		f, err := rp.fs.Open(name, vfs.SequentialAccess)
		if err != nil {
			continue
		}
		// What the edits before any damage say is all there is to know.
		_ = manifest.ScanEdits(io.NewSectionReader(f, 0, math.MaxInt64), name, func(e *manifest.VersionEdit) {
			for _, nf := range e.NewFiles {
				rp.globalSeqs[nf.Meta.FileNum] = nf.Meta.GlobalSeqNum
			}
		})
		f.Close()
	}
}

func (rp *repairer) path(name string) string { return rp.fs.PathJoin(rp.dir, name) }

// lose moves name to lost/ and records why.
func (rp *repairer) lose(name string, reason error) error {
	lost := rp.path(LostDirName)
	if err := rp.fs.MkdirAll(lost, 0o755); err != nil {
		return fmt.Errorf("shale: repairing %s: creating %s: %w", rp.dir, lost, err)
	}
	if err := rp.fs.Rename(rp.path(name), rp.fs.PathJoin(lost, name)); err != nil {
		return fmt.Errorf("shale: repairing %s: moving %s to %s: %w", rp.dir, name, lost, err)
	}
	// Both directories synced: a crash never leaves the file in neither.
	if err := errors.Join(syncDirOf(rp.fs, lost), syncDirOf(rp.fs, rp.dir)); err != nil {
		return fmt.Errorf("shale: repairing %s: moving %s to %s: %w", rp.dir, name, lost, err)
	}
	rp.rep.Lost = append(rp.rep.Lost, LostFile{Name: name, Reason: reason.Error()})
	return nil
}

// lostFile is a file to move to lost/, and why.
type lostFile struct {
	name string
	err  error
}

// repairedTable is a table that read whole.
type repairedTable struct {
	name string
	meta *manifest.FileMetadata
	// blobRefs maps each blob file the table references to the offsets
	// of the records it references and their bytes (blobRecordBytes).
	blobRefs map[base.FileNum]map[uint64]uint64
}

// rebuild reads the files, moves what cannot be used to lost/ and writes
// the new MANIFEST and CURRENT.
func (rp *repairer) rebuild() error {
	names, err := rp.fs.List(rp.dir)
	if err != nil {
		return fmt.Errorf("shale: repairing %s: %w", rp.dir, err)
	}
	slices.Sort(names)
	var (
		tables, blobs, logs, manifests []base.FileNum
		maxNum                         base.FileNum
	)
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		maxNum = max(maxNum, num)
		switch t {
		case base.FileTypeTable:
			tables = append(tables, num)
		case base.FileTypeBlob:
			blobs = append(blobs, num)
		case base.FileTypeLog:
			logs = append(logs, num)
		case base.FileTypeManifest:
			manifests = append(manifests, num)
		}
	}
	if len(tables)+len(blobs)+len(logs)+len(manifests) == 0 {
		return fmt.Errorf("shale: repairing %s: %w", rp.dir, base.InvalidArgumentf("shale: no tables, blob files, WALs or MANIFESTs there: not a database"))
	}
	// Blob files first: a table is kept only when every blob file it
	// references is. What cannot be used is moved to lost/ only once
	// every file has been read, so that an IO error moves nothing.
	var damaged, unfinished []lostFile
	blobMetas := map[base.FileNum]*manifest.BlobFileMetadata{}
	for _, num := range blobs {
		name := base.MakeFilename(base.FileTypeBlob, num)
		m, err := rp.readBlobFile(name, num)
		if err != nil && !errors.Is(err, base.ErrCorruption) {
			return fmt.Errorf("shale: repairing %s: reading %s: %w", rp.dir, name, err)
		}
		if errors.Is(err, blob.ErrNoFooter) {
			// Maybe the blob file of a memtable (write-time separation):
			// the WALs read their values from it before it goes to lost/.
			unfinished = append(unfinished, lostFile{name, err})
			continue
		}
		if err != nil {
			damaged = append(damaged, lostFile{name, err})
			continue
		}
		blobMetas[num] = m
	}
	rp.recoverGlobalSeqNums(manifests)
	var kept []repairedTable
	referenced := map[base.FileNum]bool{}
	for _, num := range tables {
		name := base.MakeFilename(base.FileTypeTable, num)
		m, blobRefs, err := rp.readTable(name, num)
		if err != nil && !errors.Is(err, base.ErrCorruption) {
			return fmt.Errorf("shale: repairing %s: reading %s: %w", rp.dir, name, err)
		}
		if err == nil {
			for _, b := range m.BlobFiles {
				if blobMetas[b] == nil {
					err = fmt.Errorf("it references blob file %s, which is missing or could not be read", base.MakeFilename(base.FileTypeBlob, b))
					break
				}
			}
		}
		if err != nil {
			damaged = append(damaged, lostFile{name, err})
			continue
		}
		for _, b := range m.BlobFiles {
			referenced[b] = true
		}
		kept = append(kept, repairedTable{name: name, meta: m, blobRefs: blobRefs})
	}
	// A blob file's garbage is what no kept table references: its records
	// less the distinct records the tables' blob indexes point to (a
	// record two tables reference, as a stale copy of a table would,
	// counts once).
	live := map[base.FileNum]map[uint64]uint64{}
	for _, t := range kept {
		for b, offs := range t.blobRefs {
			if live[b] == nil {
				live[b] = map[uint64]uint64{}
			}
			for off, n := range offs {
				live[b][off] = n
			}
		}
	}
	var keptBlobs []*manifest.BlobFileMetadata
	var garbage []manifest.BlobGarbage
	for _, num := range blobs {
		m := blobMetas[num]
		if m == nil {
			continue
		}
		name := base.MakeFilename(base.FileTypeBlob, num)
		if !referenced[num] {
			// Open would delete it as obsolete: keep its values in lost/.
			damaged = append(damaged, lostFile{name, errors.New("no readable table references it")})
			continue
		}
		keptBlobs = append(keptBlobs, m)
		rp.rep.BlobFiles = append(rp.rep.BlobFiles, name)
		var count, bytes uint64
		for _, n := range live[num] {
			count, bytes = count+1, bytes+n
		}
		if count > m.TotalCount || bytes > m.TotalBytes {
			return fmt.Errorf("shale: repairing %s: %w", rp.dir, base.CorruptionErrorf(rp.path(name), 0,
				"the tables reference %d records, %d bytes, of a blob file holding %d, %d bytes", count, bytes, m.TotalCount, m.TotalBytes))
		}
		if count < m.TotalCount {
			garbage = append(garbage, manifest.BlobGarbage{FileNum: num, Count: m.TotalCount - count, Bytes: m.TotalBytes - bytes})
		}
	}
	for _, d := range damaged {
		if err := rp.lose(d.name, d.err); err != nil {
			return err
		}
	}
	// L0 newest first, as the version orders it.
	slices.SortFunc(kept, func(a, b repairedTable) int {
		if a.meta.LargestSeq != b.meta.LargestSeq {
			if a.meta.LargestSeq > b.meta.LargestSeq {
				return -1
			}
			return 1
		}
		if a.meta.FileNum > b.meta.FileNum {
			return -1
		}
		return 1
	})
	cmp := rp.o.Comparer.Compare
	for i, a := range kept {
		for _, b := range kept[i+1:] {
			// a reads before b: wrong when b holds a newer entry of a key
			// both may hold.
			if b.meta.LargestSeq > a.meta.SmallestSeq &&
				cmp(a.meta.Smallest.UserKey, b.meta.Largest.UserKey) <= 0 && cmp(b.meta.Smallest.UserKey, a.meta.Largest.UserKey) <= 0 {
				rp.interleaved = true
			}
		}
	}
	// The WALs: only what no kept table holds yet is replayed.
	var inTables base.SeqNum
	for _, t := range kept {
		inTables = max(inTables, t.meta.LargestSeq)
	}
	next := maxNum + 1
	var liveLogs []base.FileNum
	var replayed base.SeqNum // the last seqnum an earlier WAL holds
	rp.blobs = newWALBlobResolver(rp.fs, rp.dir)
	for _, num := range logs {
		keep, err := rp.filterWAL(num, max(inTables, replayed), &replayed, &next)
		if err != nil {
			rp.blobs.close()
			return err
		}
		if keep != 0 {
			liveLogs = append(liveLogs, keep)
		}
	}
	// An unfinished blob file a kept WAL reads values from is the file of
	// a memtable (write-time separation): it stays, for Open to replay
	// (and remove once flushed). Others go to lost/.
	readFrom := rp.blobs.files()
	if err := rp.blobs.close(); err != nil {
		return fmt.Errorf("shale: repairing %s: %w", rp.dir, err)
	}
	for _, d := range unfinished {
		if _, num, ok := base.ParseFilename(d.name); ok && slices.Contains(readFrom, num) {
			continue
		}
		if err := rp.lose(d.name, d.err); err != nil {
			return err
		}
	}
	manifestNum := next
	edit := &manifest.VersionEdit{
		ManifestFormat:    manifest.ManifestFormatV1,
		ComparerName:      rp.o.Comparer.Name,
		HasLogNumber:      true,
		HasNextFileNumber: true,
		NextFileNumber:    manifestNum + 1,
		HasLastSeq:        true,
		NewBlobFiles:      keptBlobs,
		BlobGarbage:       garbage,
	}
	if len(liveLogs) > 0 {
		edit.LogNumber = slices.Min(liveLogs)
		for _, l := range liveLogs {
			rp.rep.WALs = append(rp.rep.WALs, base.MakeFilename(base.FileTypeLog, l))
		}
	} else {
		// No WAL to replay: every one found is older than this.
		edit.LogNumber = manifestNum
	}
	if rp.sawMerge && rp.o.MergeOperator != nil {
		// The operands were written under some operator; the one the
		// repair is given is the best knowledge of it (Open then refuses
		// another).
		edit.MergeOperatorName = rp.o.MergeOperator.Name()
	}
	for _, t := range kept {
		edit.LastSeq = max(edit.LastSeq, t.meta.LargestSeq)
		edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: 0, Meta: t.meta})
		rp.rep.Tables = append(rp.rep.Tables, t.name)
	}
	if err := manifest.WriteManifest(rp.fs, rp.dir, manifestNum, rp.o.Comparer, rp.o.NumLevels, edit); err != nil {
		return fmt.Errorf("shale: repairing %s: %w", rp.dir, err)
	}
	rp.rep.Manifest = base.MakeFilename(base.FileTypeManifest, manifestNum)
	// The old MANIFESTs are kept for inspection, out of the way.
	for _, num := range manifests {
		if err := rp.lose(base.MakeFilename(base.FileTypeManifest, num), errors.New("replaced by the repaired MANIFEST")); err != nil {
			return err
		}
	}
	return nil
}

// readBlobFile reads the blob file name whole and returns its metadata.
func (rp *repairer) readBlobFile(name string, num base.FileNum) (_ *manifest.BlobFileMetadata, err error) {
	f, err := rp.fs.Open(rp.path(name))
	if err != nil {
		return nil, err
	}
	r, err := blob.NewReader(f, blob.ReaderOptions{FileName: rp.path(name), FileNum: num})
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := r.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if err := r.VerifyFileChecksum(); err != nil {
		return nil, err
	}
	it := r.NewIter(blob.IterOptions{})
	var count, bytes uint64
	for it.Next() {
		count++
		bytes += blobRecordBytes(it.Index())
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, err
	}
	p := r.Properties()
	if count != p.Count {
		return nil, base.CorruptionErrorf(rp.path(name), 0, "blob file holds %d records, its footer counts %d", count, p.Count)
	}
	method, sum := "crc32c", binary.BigEndian.AppendUint32(nil, uint32(p.FileChecksum))
	if p.Checksum == blob.ChecksumXXHash64 {
		method, sum = "xxhash64", binary.BigEndian.AppendUint64(nil, p.FileChecksum)
	}
	return &manifest.BlobFileMetadata{FileNum: num, TotalCount: count, TotalBytes: bytes, Size: p.Size,
		ChecksumMethod: method, ChecksumValue: sum}, nil
}

// readTable reads the table name whole and returns its metadata: key
// range and seqnums from its entries and range tombstones, counts from its
// properties, and the blob files its blob indexes reference.
func (rp *repairer) readTable(name string, num base.FileNum) (_ *manifest.FileMetadata, refs map[base.FileNum]map[uint64]uint64, err error) {
	path := rp.path(name)
	f, err := rp.fs.Open(path)
	if err != nil {
		return nil, nil, err
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	r, err := sstable.NewReader(f, sstable.ReaderOptions{Comparer: rp.o.Comparer, FileName: path, MaxAutoReadaheadSize: -1})
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if cerr := r.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if err := r.VerifyChecksums(); err != nil {
		return nil, nil, err
	}
	cmp := rp.o.Comparer.Compare
	m := &manifest.FileMetadata{FileNum: num, Size: uint64(size), SmallestSeq: base.SeqNumMax}
	has := false
	widen := func(smallest, largest base.InternalKey, seq base.SeqNum) {
		if !has || base.InternalCompare(cmp, smallest, m.Smallest) < 0 {
			m.Smallest = smallest.Clone()
		}
		if !has || base.InternalCompare(cmp, largest, m.Largest) > 0 {
			m.Largest = largest.Clone()
		}
		m.SmallestSeq, m.LargestSeq = min(m.SmallestSeq, seq), max(m.LargestSeq, seq)
		has = true
	}
	refs = map[base.FileNum]map[uint64]uint64{}
	it := r.NewIter(sstable.IterOptions{ReadaheadSize: 2 << 20})
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		widen(k, k, k.SeqNum())
		rp.sawMerge = rp.sawMerge || k.Kind() == base.KindMerge
		if k.Kind() == base.KindBlobIndex {
			x, err := blob.DecodeIndex(path, it.Value())
			if err != nil {
				it.Close()
				return nil, nil, err
			}
			if refs[x.FileNum] == nil {
				refs[x.FileNum] = map[uint64]uint64{}
			}
			refs[x.FileNum][x.Offset] = blobRecordBytes(x)
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, nil, err
	}
	for _, sp := range r.RangeTombstones() {
		for _, seq := range sp.Seqs {
			widen(base.MakeInternalKey(sp.Start, seq, base.KindRangeDelete), base.MakeRangeDeleteSentinel(sp.End), seq)
		}
	}
	if !has {
		return nil, nil, base.CorruptionErrorf(path, 0, "table holds no entries")
	}
	p := r.Properties()
	if _, external := p.User[propExternalVersion]; external {
		// An ingested table: its entries, stored at seqnum 0, read at the
		// global seqnum its MANIFEST edit recorded. Read at 0 they would
		// sort under older data of their keys and bring it back, so a
		// table whose seqnum no MANIFEST still holds is not kept.
		g, ok := rp.globalSeqs[num]
		if !ok {
			return nil, nil, base.CorruptionErrorf(path, 0, "an ingested table whose global seqnum no readable MANIFEST records: its entries cannot be ordered against the other tables'")
		}
		at := func(k base.InternalKey) base.InternalKey {
			if k.IsExclusiveSentinel() {
				return k
			}
			return base.MakeInternalKey(k.UserKey, g, k.Kind())
		}
		m.Smallest, m.Largest = at(m.Smallest), at(m.Largest)
		m.SmallestSeq, m.LargestSeq, m.GlobalSeqNum = g, g, g
	}
	m.NumEntries, m.NumDeletions, m.NumRangeDeletions = p.NumEntries, p.NumDeletions, p.NumRangeDeletions
	m.RawKeySize, m.RawValueSize = p.RawKeySize, p.RawValueSize
	m.NumDataBlocks, m.NumTombstoneDenseBlocks = p.NumDataBlocks, p.NumTombstoneDenseBlocks
	for b := range refs {
		m.BlobFiles = append(m.BlobFiles, b)
	}
	slices.Sort(m.BlobFiles)
	return m, refs, nil
}

// filterWAL reads the WAL num (skipping damaged records) and decides what
// of it the Open after the repair replays: the batches above skipAbove
// (the newest seqnum the kept tables, or an earlier WAL, hold: a table
// flushed from a WAL by an interrupted recovery or repair holds a prefix of
// its batches, and a WAL rewritten by an interrupted repair repeats the
// old one's). When every record is intact and above it, the WAL is kept
// as it is. Otherwise the batches above it are written to a new WAL
// (numbered *next, which then grows), synced, and the old one is moved to
// lost/; a WAL with nothing above it is moved there alone. Replaying a
// batch twice would apply its merge operands twice. It returns the number
// of the WAL to replay (0: none) and raises *replayed to the last seqnum
// kept.
func (rp *repairer) filterWAL(num base.FileNum, skipAbove base.SeqNum, replayed *base.SeqNum, next *base.FileNum) (base.FileNum, error) {
	name := base.MakeFilename(base.FileTypeLog, num)
	path := rp.path(name)
	var (
		recs    [][]byte
		skipped int
		bad     []error
	)
	res, err := wal.Replay(rp.fs, path, SkipAnyCorruptedRecords, func(rec []byte, off int64) error {
		r, err := walBatch(path, off, rec)
		switch {
		case err != nil:
			bad = append(bad, err)
		case r.count == 0:
		case r.seq <= skipAbove:
			skipped++
		default:
			// Values written to blob files at commit must read back from
			// their (unfinished) files, which stay for Open to read.
			if _, _, err := rp.blobs.resolve(path, off, rec); err != nil {
				bad = append(bad, err)
				return nil
			}
			for {
				kind, _, _, ok, _ := r.next()
				if !ok {
					break
				}
				rp.sawMerge = rp.sawMerge || kind == base.KindMerge
			}
			recs = append(recs, slices.Clone(rec))
			*replayed = max(*replayed, r.seq+base.SeqNum(r.count)-1)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("shale: repairing %s: reading %s: %w", rp.dir, name, err)
	}
	if res.DroppedRecords > 0 {
		rp.rep.WALLosses = append(rp.rep.WALLosses, WALLoss{File: path, Offset: res.DroppedOffset, Records: int64(res.DroppedRecords),
			Bytes: res.TornTailBytes + res.SkippedBytes, Reason: "damaged records skipped"})
	}
	for _, e := range bad {
		rp.rep.WALLosses = append(rp.rep.WALLosses, WALLoss{File: path, Records: 1, Reason: e.Error()})
	}
	if skipped == 0 && len(bad) == 0 && res.DroppedRecords == 0 {
		return num, nil
	}
	var newNum base.FileNum
	if len(recs) > 0 {
		newNum = *next
		*next++
		newName := base.MakeFilename(base.FileTypeLog, newNum)
		f, err := rp.fs.Create(rp.path(newName))
		if err != nil {
			return 0, fmt.Errorf("shale: repairing %s: creating %s: %w", rp.dir, newName, err)
		}
		w := wal.NewWriter(f, rp.path(newName))
		for _, rec := range recs {
			if err = w.AddRecord(rec); err != nil {
				break
			}
		}
		if err == nil {
			err = w.Commit(true)
		}
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = syncDirOf(rp.fs, rp.dir)
		}
		if err != nil {
			return 0, fmt.Errorf("shale: repairing %s: writing %s: %w", rp.dir, newName, err)
		}
	}
	reason := fmt.Sprintf("%d batch(es) already in tables", skipped)
	if len(recs) > 0 {
		reason += fmt.Sprintf("; the %d others copied to %s", len(recs), base.MakeFilename(base.FileTypeLog, newNum))
	}
	if err := rp.lose(name, errors.New(reason)); err != nil {
		return 0, err
	}
	return newNum, nil
}
