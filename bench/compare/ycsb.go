package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/client"
	"github.com/pingcap/go-ycsb/pkg/measurement"
	"github.com/pingcap/go-ycsb/pkg/prop"
	"github.com/pingcap/go-ycsb/pkg/util"
	_ "github.com/pingcap/go-ycsb/pkg/workload" // registers the core workload
	"github.com/pingcap/go-ycsb/pkg/ycsb"
)

// ycsbConfig sizes the YCSB workloads.
type ycsbConfig struct {
	// records is how many records ycsb_load inserts (YCSB's recordcount).
	records int64
	// ops is how many operations each of ycsb_a..ycsb_f runs, shared by
	// its threads (operationcount); 0: records.
	ops int64
	// fields and fieldLength shape a record: fields of fieldLength random
	// letters each (fieldcount, fieldlength).
	fields      int
	fieldLength int
}

func (c ycsbConfig) operations() int64 {
	if c.ops > 0 {
		return c.ops
	}
	return c.records
}

// Defaults of the YCSB flags: YCSB core's 1 KiB records (10 fields of 100
// bytes), and two client threads.
const (
	defaultYCSBRecords     = 500000
	defaultYCSBFields      = 10
	defaultYCSBFieldLength = 100
	defaultYCSBThreads     = 2
)

// ycsbMix is one of YCSB's core workloads: its operations' proportions and
// the distribution of the records they pick.
type ycsbMix struct {
	read, update, insert, scan, readModifyWrite float64
	distribution                                string
	summary                                     string
}

// ycsbMixes are YCSB's workloads A to F as YCSB defines them (its
// workloads/workloada..workloadf). E's scans read 1 to ycsbMaxScanLength
// records, uniformly.
var ycsbMixes = map[string]ycsbMix{
	"ycsb_a": {read: 0.5, update: 0.5, distribution: "zipfian", summary: "50% read, 50% update, zipfian"},
	"ycsb_b": {read: 0.95, update: 0.05, distribution: "zipfian", summary: "95% read, 5% update, zipfian"},
	"ycsb_c": {read: 1, distribution: "zipfian", summary: "100% read, zipfian"},
	"ycsb_d": {read: 0.95, insert: 0.05, distribution: "latest", summary: "95% read, 5% insert, latest"},
	"ycsb_e": {scan: 0.95, insert: 0.05, distribution: "zipfian", summary: "95% scan of 1-100, 5% insert, zipfian"},
	"ycsb_f": {read: 0.5, readModifyWrite: 0.5, distribution: "zipfian", summary: "50% read, 50% read-modify-write, zipfian"},
}

const ycsbMaxScanLength = 100

// ycsbThreads is the YCSB workloads' client threads: --threads, or
// defaultYCSBThreads without it.
func (c workloadConfig) ycsbThreads() int {
	if c.threads > 0 {
		return c.threads
	}
	return defaultYCSBThreads
}

// ycsbProperties are the go-ycsb properties every YCSB workload shares.
func (s *session) ycsbProperties() *properties.Properties {
	p := properties.NewProperties()
	set := func(key string, v any) { p.MustSet(key, fmt.Sprint(v)) }
	set(prop.RecordCount, s.cfg.ycsb.records)
	set(prop.OperationCount, s.cfg.ycsb.operations())
	set(prop.ThreadCount, s.cfg.ycsbThreads())
	set(prop.FieldCount, s.cfg.ycsb.fields)
	set(prop.FieldLength, s.cfg.ycsb.fieldLength)
	set(prop.ReadAllFields, true)
	// The client prints a summary to stdout every interval; a run is one
	// measurement, taken by timedWorkload.
	set(prop.LogInterval, int64(1e9))
	return p
}

// ycsbLoad is YCSB's load phase: records inserted in hashed (random)
// order into a fresh DB by the client's threads.
func (s *session) ycsbLoad() (result, error) {
	p := s.ycsbProperties()
	p.MustSet(prop.DoTransactions, "false")
	res, err := s.ycsbRun(p)
	if err == nil {
		s.ycsbLoaded = true
	}
	return res, err
}

// ycsbTransactions runs one of ycsbMixes over the records ycsb_load wrote,
// after a flush, as the read workloads flush first.
func (s *session) ycsbTransactions(name string) (result, error) {
	mix := ycsbMixes[name]
	if err := s.eng.flush(); err != nil {
		return result{}, err
	}
	p := s.ycsbProperties()
	set := func(key string, v any) { p.MustSet(key, fmt.Sprint(v)) }
	set(prop.DoTransactions, true)
	set(prop.ReadProportion, mix.read)
	set(prop.UpdateProportion, mix.update)
	set(prop.InsertProportion, mix.insert)
	set(prop.ScanProportion, mix.scan)
	set(prop.ReadModifyWriteProportion, mix.readModifyWrite)
	set(prop.RequestDistribution, mix.distribution)
	set(prop.MaxScanLength, ycsbMaxScanLength)
	return s.ycsbRun(p)
}

// ycsbRun runs go-ycsb's core workload, configured by p, through its client
// against the engine, and times every operation of the workload (one read,
// update, insert, scan or read-modify-write) on its thread.
func (s *session) ycsbRun(p *properties.Properties) (result, error) {
	threads := s.cfg.ycsbThreads()
	// go-ycsb's worker exits the process when a thread would get no
	// operation; main checks the flags, this the tests.
	if s.cfg.ycsb.records < int64(threads) || s.cfg.ycsb.operations() < int64(threads) {
		return result{}, fmt.Errorf("ycsb: %d records and %d operations for %d threads: each thread needs one", s.cfg.ycsb.records, s.cfg.ycsb.operations(), threads)
	}
	core, err := ycsb.GetWorkloadCreator("core").Create(p)
	if err != nil {
		return result{}, err
	}
	defer core.Close()
	// The core workload measures its read-modify-writes into go-ycsb's
	// global measurement; it must exist.
	measurement.InitMeasure(p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &timedWorkload{Workload: core, eng: s.eng, cancel: cancel}
	db := &ycsbDB{eng: s.eng, codec: util.NewRowCodec(p)}
	start := time.Now()
	client.NewClient(p, w, db).Run(ctx)
	res := result{elapsed: time.Since(start)}
	if w.err != nil {
		return result{}, w.err
	}
	timers := make([]*opTimer, len(w.threads))
	for i, t := range w.threads {
		res.ops += t.ops
		res.found += t.found
		timers[i] = t.timer
	}
	setLatency(&res, timers...)
	return res, nil
}

// timedWorkload is go-ycsb's core workload with each operation timed and
// counted on its thread. go-ycsb's client only prints an operation's error
// (and not even that by default); timedWorkload keeps the first and stops
// the run.
type timedWorkload struct {
	ycsb.Workload
	eng    engine
	cancel context.CancelFunc

	mu      sync.Mutex
	threads []*ycsbThread
	err     error
}

// ycsbThread is one client thread's state, in its context.
type ycsbThread struct {
	timer *opTimer
	rd    engineReader
	// record is the encoding buffer of the thread's writes.
	record []byte
	// ops counts the thread's operations; found, the records its reads,
	// read-modify-writes and scans found.
	ops, found int64
}

type ycsbThreadKey struct{}

func threadOf(ctx context.Context) *ycsbThread { return ctx.Value(ycsbThreadKey{}).(*ycsbThread) }

func (w *timedWorkload) InitThread(ctx context.Context, id, count int) context.Context {
	ctx = w.Workload.InitThread(ctx, id, count)
	t := &ycsbThread{timer: newOpTimer(), rd: w.eng.newReader()}
	w.mu.Lock()
	w.threads = append(w.threads, t)
	w.mu.Unlock()
	return context.WithValue(ctx, ycsbThreadKey{}, t)
}

func (w *timedWorkload) DoInsert(ctx context.Context, db ycsb.DB) error {
	return w.done(ctx, w.Workload.DoInsert(ctx, db))
}

func (w *timedWorkload) DoTransaction(ctx context.Context, db ycsb.DB) error {
	return w.done(ctx, w.Workload.DoTransaction(ctx, db))
}

// done ends the thread's operation, which returned err.
func (w *timedWorkload) done(ctx context.Context, err error) error {
	t := threadOf(ctx)
	t.timer.done()
	t.ops++
	if err != nil {
		w.mu.Lock()
		if w.err == nil {
			w.err = err
		}
		w.mu.Unlock()
		w.cancel()
	}
	return err
}

// ycsbDB is go-ycsb's DB interface over an engine: a record is one key
// (YCSB's key; there is one table) whose value holds every field, encoded
// with go-ycsb's RowCodec as its own RocksDB and Badger bindings encode
// them. Reads and scans decode the fields they return; an update reads the
// record, sets the fields given and writes it back, as those bindings do.
type ycsbDB struct {
	eng   engine
	codec *util.RowCodec
}

func (d *ycsbDB) Close() error { return nil }

func (d *ycsbDB) InitThread(ctx context.Context, _, _ int) context.Context { return ctx }

func (d *ycsbDB) CleanupThread(context.Context) {}

// Read returns the record's fields, or no fields for a missing record.
func (d *ycsbDB) Read(ctx context.Context, _ string, key string, fields []string) (map[string][]byte, error) {
	t := threadOf(ctx)
	ok, err := t.rd.get([]byte(key))
	if err != nil || !ok {
		return nil, err
	}
	t.found++
	return d.codec.Decode(t.rd.value(), fields)
}

// Scan reads count records from startKey with a new iterator.
func (d *ycsbDB) Scan(ctx context.Context, _ string, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	t := threadOf(ctx)
	it, err := d.eng.newIter()
	if err != nil {
		return nil, err
	}
	rows := make([]map[string][]byte, 0, count)
	for ok := it.seekGE([]byte(startKey)); ok && len(rows) < count; ok = it.next() {
		v, err := it.value()
		if err != nil {
			it.close()
			return nil, err
		}
		row, err := d.codec.Decode(v, fields)
		if err != nil {
			it.close()
			return nil, err
		}
		rows = append(rows, row)
	}
	t.found += int64(len(rows))
	return rows, it.close()
}

// Update sets values' fields in the record (a missing record is created).
func (d *ycsbDB) Update(ctx context.Context, _ string, key string, values map[string][]byte) error {
	t := threadOf(ctx)
	k := []byte(key)
	ok, err := t.rd.get(k)
	if err != nil {
		return err
	}
	row := values
	if ok {
		if row, err = d.codec.Decode(t.rd.value(), nil); err != nil {
			return err
		}
		for f, v := range values {
			row[f] = v
		}
	}
	return d.write(t, k, row)
}

func (d *ycsbDB) Insert(ctx context.Context, _ string, key string, values map[string][]byte) error {
	return d.write(threadOf(ctx), []byte(key), values)
}

func (d *ycsbDB) Delete(_ context.Context, _ string, key string) error {
	return d.eng.delete([]byte(key))
}

func (d *ycsbDB) write(t *ycsbThread, key []byte, row map[string][]byte) error {
	var err error
	if t.record, err = d.codec.Encode(t.record[:0], row); err != nil {
		return err
	}
	return d.eng.put(key, t.record)
}
