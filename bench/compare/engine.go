package main

// engine is the little each workload needs from a key-value store; the
// workloads are written once against it.
type engine interface {
	name() string
	put(key, value []byte) error
	delete(key []byte) error
	// get reports whether key exists, reading its value into memory the
	// engine owns until the next get (what a caller keeping the value has).
	get(key []byte) (bool, error)
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

// engineIter is a forward iterator.
type engineIter interface {
	seekGE(key []byte) bool
	next() bool
	key() []byte
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
	// shaleMmapReads sets shale's Options.AllowMmapReads (Badger reads
	// its value log through mappings).
	shaleMmapReads bool
	// badgerValueThreshold sets Badger's Options.ValueThreshold; 0 leaves
	// Badger's default.
	badgerValueThreshold int64
}

// opener opens a fresh engine in dir.
type opener func(dir string, cfg engineConfig) (engine, error)
