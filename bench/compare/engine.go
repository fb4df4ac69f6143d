package main

// engine is the little each workload needs from a key-value store; the
// workloads are written once against it.
type engine interface {
	name() string
	// put and delete may run in several goroutines at once (the YCSB
	// workloads write from each of their threads), and concurrently with
	// readers and iterators.
	put(key, value []byte) error
	delete(key []byte) error
	// newReader returns a reader for one goroutine. Readers of one engine
	// may run concurrently with each other and with puts, never with
	// flush, compactAll or close (which may reopen the DB).
	newReader() engineReader
	newIter() (engineIter, error)
	flush() error
	// compactAll compacts every key (the workloads' keys are decimal
	// digits), as a user's manual full compaction does.
	compactAll() error
	// shape describes the engine's LSM (levels and file counts), printed
	// with --shape so that runs can be compared on equal footing.
	shape() string
	close() error
}

// syncPutter is an engine that can write with its WAL synced before the
// put returns (fillsync); every engine here is one.
type syncPutter interface {
	putSync(key, value []byte) error
}

// engineReader reads point keys for one goroutine; it keeps the values it
// reads in buffers of its own.
type engineReader interface {
	// get reports whether key exists, reading its value into memory the
	// reader owns until the next get (what a caller keeping the value has).
	get(key []byte) (bool, error)
	// value is the value the last get found, in the reader's memory.
	value() []byte
	// multiGet looks up keys together and reports how many exist, reading
	// their values as get does: through the engine's MultiGet where it has
	// one, else by getsInLoop.
	multiGet(keys [][]byte) (found int, err error)
}

// getsInLoop is multiGet for an engine without a MultiGet: one get per key.
func getsInLoop(r engineReader, keys [][]byte) (int, error) {
	found := 0
	for _, k := range keys {
		ok, err := r.get(k)
		if err != nil {
			return found, err
		}
		if ok {
			found++
		}
	}
	return found, nil
}

// engineIter is a forward iterator.
type engineIter interface {
	// seekGE positions the iterator at the first key >= key (nil: the
	// first key) and reports whether there is one.
	seekGE(key []byte) bool
	next() bool
	key() []byte
	// value reads the current key's value (valid until the iterator
	// moves); the seek and scan workloads never call it, YCSB's scan does.
	value() ([]byte, error)
	close() error
}

// engineConfig holds the settings every engine is opened with, and a few
// that only one engine has.
type engineConfig struct {
	cacheSize       int64
	writeBufferSize int
	bloomBits       int
	// shaleWALBackgroundWrites sets shale's Options.WALBackgroundWrites.
	shaleWALBackgroundWrites bool
	// shaleBlobFiles, shaleMinBlobSize and shaleBlobGC set shale's
	// Options.EnableBlobFiles, MinBlobSize and EnableBlobGarbageCollection.
	shaleBlobFiles   bool
	shaleMinBlobSize int64
	shaleBlobGC      bool
	// shaleBlobWriteSeparation sets shale's
	// Options.EnableBlobWriteSeparation (values to blob files at commit).
	shaleBlobWriteSeparation bool
	// shaleMmapReads sets shale's Options.AllowMmapReads (Badger reads
	// its value log through mappings).
	shaleMmapReads bool
	// shaleMmapWrites sets shale's Options.AllowMmapWrites (the WAL
	// written through a shared mapping: no system call per write, still
	// process-crash durable).
	shaleMmapWrites bool
	// badgerValueThreshold sets Badger's Options.ValueThreshold; 0 leaves
	// Badger's default.
	badgerValueThreshold int64

	// partitionIndexAndFilters gives shale and RocksDB partitioned index
	// and filters (IndexType/index_type two-level, PartitionFilters/
	// partition_filters), as db_bench's --partition_index_and_filters.
	partitionIndexAndFilters bool
}

// opener opens a fresh engine in dir.
type opener func(dir string, cfg engineConfig) (engine, error)
