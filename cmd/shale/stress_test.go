package main

import (
	"bytes"
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/stresslog"
	"github.com/shaledb/shale/vfs"
)

// TestMain lets the test binary be the child of `shale stress`: the parent
// re-executes os.Executable() (this binary, in tests) with stressChildEnv
// set and the child's arguments.
func TestMain(m *testing.M) {
	if os.Getenv(stressChildEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// stressTestSync is the WAL mode of TestStressKills: false, since a commit
// without Sync must survive a process crash too (its WAL record is written
// before it is acknowledged).
const stressTestSync = false

// TestStressKills runs the process-crash loop with four writers (5 kills,
// or 60 with SHALE_STRESS=1) and with one, where the state must be exactly
// the acked prefix plus possibly the batch in flight (2 kills, or 15). A
// violation fails with the seed to reproduce it.
func TestStressKills(t *testing.T) {
	long := os.Getenv("SHALE_STRESS") == "1"
	for _, tc := range []struct {
		threads, kills, longKills int
		// deletePersistence is --delete_persistence_threshold ("": off).
		deletePersistence string
	}{
		{threads: 4, kills: 5, longKills: 60},
		{threads: 1, kills: 2, longKills: 15},
		{threads: 4, kills: 3, longKills: 30, deletePersistence: "20ms"},
	} {
		name := fmt.Sprintf("threads=%d", tc.threads)
		args := []string{"--threads", strconv.Itoa(tc.threads)}
		if tc.deletePersistence != "" {
			name += ",delete_persistence_threshold=" + tc.deletePersistence
			args = append(args, "--delete_persistence_threshold", tc.deletePersistence)
		}
		t.Run(name, func(t *testing.T) {
			kills := tc.kills
			if long {
				kills = tc.longKills
			}
			runStressTest(t, kills, args...)
		})
	}
}

// TestStressKillsDeletePolicies runs the kill test under each delete
// policy on its own (TestStressKills runs the default, mixed): tables
// marked by a deletion collector, or compacted for their tombstone density,
// when the child is killed.
func TestStressKillsDeletePolicies(t *testing.T) {
	kills := 3
	if os.Getenv("SHALE_STRESS") == "1" {
		kills = 30
	}
	for _, policy := range []string{"collector", "default", "off"} {
		t.Run(policy, func(t *testing.T) {
			runStressTest(t, kills, "--delete_policy", policy)
		})
	}
}

// TestStressKillsSecondaryDeletes runs stress with writers issuing
// DeleteBySecondaryRange over their own earlier batches, so that kills land
// in the tombstone's commit, in the flushes and compactions applying it and
// in its retirement.
func TestStressKillsSecondaryDeletes(t *testing.T) {
	kills := 4
	if os.Getenv("SHALE_STRESS") == "1" {
		kills = 40
	}
	runStressTest(t, kills, "--secondary_deletes")
}

// TestStressKillsBlobFiles runs stress with blob files on, so that kills
// land in blob file writes and syncs, the edits adding blob files and those
// deleting them, and the removal of obsolete ones; every reopen reads the
// acknowledged values back from blob files.
func TestStressKillsBlobFiles(t *testing.T) {
	kills := 4
	if os.Getenv("SHALE_STRESS") == "1" {
		kills = 40
	}
	runStressTest(t, kills, "--enable_blob_files", "--min_blob_size", "32")
}

// TestStressKillsBlobWriteSeparation runs stress with values separated at
// commit, so that kills land between a value's blob write and its WAL
// record, in the blob syncs of synced writes and rotations, and in the
// flushes that add the memtables' blob files; every reopen replays the
// WALs' blob indexes from the unfinished files and reads every
// acknowledged value back.
func TestStressKillsBlobWriteSeparation(t *testing.T) {
	kills := 4
	if os.Getenv("SHALE_STRESS") == "1" {
		kills = 40
	}
	runStressTest(t, kills, "--enable_blob_files", "--enable_blob_write_separation", "--min_blob_size", "32",
		"--enable_blob_garbage_collection", "--blob_garbage_collection_age_cutoff", "0.5")
}

// TestStressKillsPartitionedIndex runs stress with partitioned index and
// filters in every table, so that kills land in the writes of partitioned
// tables and every reopen reads the acknowledged values through them.
func TestStressKillsPartitionedIndex(t *testing.T) {
	kills := 4
	if os.Getenv("SHALE_STRESS") == "1" {
		kills = 20
	}
	runStressTest(t, kills, "--partition_index_and_filters")
}

// TestStressKillsBlobGC runs stress with blob garbage collection relocating
// every blob file's values and forcing compactions of tables referencing
// files half garbage, so that kills also land in relocations and in the
// edits deleting the files they empty.
func TestStressKillsBlobGC(t *testing.T) {
	kills := 4
	if os.Getenv("SHALE_STRESS") == "1" {
		kills = 40
	}
	runStressTest(t, kills, "--enable_blob_files", "--min_blob_size", "32", "--enable_blob_garbage_collection",
		"--blob_garbage_collection_age_cutoff", "1", "--blob_garbage_collection_force_threshold", "0.5",
		"--allow_mmap_reads")
}

// TestStressKillsMerges runs stress with writers merging into their keys
// (several operands a batch, some with a Put after them) over blob files,
// so that kills land in flushes and compactions that merge operands fully
// or in part, and every reopen reads merged values back exactly.
func TestStressKillsMerges(t *testing.T) {
	kills := 4
	if os.Getenv("SHALE_STRESS") == "1" {
		kills = 40
	}
	runStressTest(t, kills, "--merges", "--enable_blob_files", "--min_blob_size", "64")
}

// TestStressKillsMmapWAL runs stress with WALs written through memory
// mappings (Options.AllowMmapWrites): a kill right after a write without
// Sync returned must find it in the WAL, from the page cache.
func TestStressKillsMmapWAL(t *testing.T) {
	kills := 4
	if os.Getenv("SHALE_STRESS") == "1" {
		kills = 40
	}
	runStressTest(t, kills, "--allow_mmap_writes")
}

// TestStressKillsSecondaryInstance runs the kill test with a secondary
// instance in the parent: it catches up and reads while each child writes
// (blob files, merges; a WAL written through a mapping), and after each kill it must show exactly what the
// reopened database shows, which the run then checks against the model.
func TestStressKillsSecondaryInstance(t *testing.T) {
	kills := 4
	if os.Getenv("SHALE_STRESS") == "1" {
		kills = 40
	}
	for _, extra := range [][]string{nil, {"--enable_blob_files", "--min_blob_size", "50", "--merges"}, {"--allow_mmap_writes"}} {
		t.Run(strings.Join(append([]string{"secondary"}, extra...), ","), func(t *testing.T) {
			stdout := runStressTest(t, kills, append([]string{"--secondary_instance"}, extra...)...)
			m := regexp.MustCompile(`secondary instance: +(\d+) catch-ups read while children wrote, (\d+) states after kills`).FindStringSubmatch(stdout)
			if m == nil || m[1] == "0" || m[2] != strconv.Itoa(kills) {
				t.Fatalf("the summary does not report catch-ups and %d compared states:\n%s", kills, stdout)
			}
		})
	}
}

func runStressTest(t *testing.T, kills int, extra ...string) (stdout string) {
	seed := uint64(time.Now().UnixNano())
	dir := filepath.Join(testdir.New(t), "stress")
	args := []string{"stress", "--db", dir, "--kills", strconv.Itoa(kills),
		"--seed", strconv.FormatUint(seed, 10), "--kill_min", "10ms", "--kill_max", "150ms",
		"--sync=" + strconv.FormatBool(stressTestSync)}
	args = append(args, extra...)
	start := time.Now()
	stdout, err := runCmd(t, args...)
	t.Logf("%v\n%s", time.Since(start), stdout)
	if err != nil {
		t.Fatalf("shale %s:\n%v", strings.Join(args, " "), err)
	}
	want := fmt.Sprintf(`(?m)^kills: +%d in `, kills)
	if !regexp.MustCompile(want).MatchString(stdout) {
		t.Fatalf("summary does not report %d kills:\n%s", kills, stdout)
	}
	m := regexp.MustCompile(`acked batches verified: +(\d+)`).FindStringSubmatch(stdout)
	if m == nil || m[1] == "0" {
		t.Fatalf("no acknowledged batch was verified:\n%s", stdout)
	}
	if !strings.Contains(stdout, "ok: no acknowledged batch lost") {
		t.Fatalf("no ok line:\n%s", stdout)
	}
	return stdout
}

// runCmd runs the command tree with args and returns stdout.
func runCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := newRootCmd(&stdout, &stderr)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return stdout.String(), err
}

func TestStressRejectsBadFlags(t *testing.T) {
	full := testdir.New(t)
	os.WriteFile(filepath.Join(full, "precious.txt"), []byte("x"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"stress", "--kills", "1"}, "--db is required"},
		{[]string{"stress", "--db", full, "--kills", "1"}, "is not empty"},
		{[]string{"stress", "--db", testdir.New(t) + "/x", "--kills", "0"}, "give --kills or --duration"},
		{[]string{"stress", "--db", testdir.New(t) + "/x", "--threads", "8", "--keys", "4"}, "--keys must be between"},
		{[]string{"stress", "--db", testdir.New(t) + "/x", "--kill_min", "2s", "--kill_max", "1s"}, "--kill_max"},
		{[]string{"stress", "--db", testdir.New(t) + "/x", "--kills", "1", "--delete_policy", "sometimes"}, "--delete_policy must be one of"},
		{[]string{"stress", "--db", testdir.New(t) + "/x", "--delete_persistence_threshold", "-1s"}, "--delete_persistence_threshold"},
	} {
		_, err := runCmd(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(full, "precious.txt")); err != nil {
		t.Fatal("stress touched a directory that was not empty")
	}
}

func TestStressValuesNameTheirBatch(t *testing.T) {
	id := batchID{gen: 12, thread: 3, seq: 4567}
	for _, n := range []int{0, 5, 30, 100, 1000} {
		v := stressValue(nil, 42, id, n)
		if len(v) < n {
			t.Fatalf("value of %d bytes asked, got %d", n, len(v))
		}
		got, named, exact := parseStressValue(42, v)
		if !named || !exact || got != id {
			t.Fatalf("n=%d: parsed %v named=%v exact=%v from %q", n, got, named, exact, v)
		}
		if _, _, exact := parseStressValue(43, v); exact {
			t.Fatalf("the value of key 42 passes for key 43")
		}
		if n >= 30 {
			bad := append([]byte(nil), v...)
			bad[len(bad)-1] ^= 1
			if _, named, exact := parseStressValue(42, bad); !named || exact {
				t.Fatalf("a flipped filler byte passes: %q", bad)
			}
		}
	}
	if _, named, _ := parseStressValue(1, []byte("hello")); named {
		t.Fatal("garbage parsed as a value")
	}
	for _, k := range []uint32{0, 7, 999, 1_000_000} {
		got, ok := parseStressKey(stressKey(nil, k))
		if !ok || got != k {
			t.Fatalf("key %d round-trips to %d, %v", k, got, ok)
		}
	}
	if string(stressKey(nil, 9)) >= string(stressKey(nil, 10)) {
		t.Fatal("keys do not sort numerically")
	}
}

// verifierCase sets up a stress run of one writer over 20 keys whose DB
// holds what dbOps wrote, with a log of acked batches and maybe one in flight.
type verifierCase struct {
	acked    [][]stresslog.Op
	inFlight []stresslog.Op
	// write lists what goes into the DB, by batch number (1-based) and
	// whether to apply all of it or only the first op.
	write []int
	// partial applies only the first op of the in-flight batch.
	partial bool
	// unlogged is written to the DB last, as a batch no log mentions.
	unlogged []stresslog.Op
	// damage, when set, overwrites key 5 with a copy of its value with
	// one byte flipped.
	damage bool
}

func runVerifierCase(t *testing.T, c verifierCase) (*stressRun, error) {
	t.Helper()
	cfg := defaultStressConfig()
	cfg.dir = testdir.New(t)
	cfg.keys, cfg.threads = 20, 1
	if err := os.MkdirAll(filepath.Join(cfg.dir, "expected"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &stressRun{cfg: &cfg, model: make(stressModel, cfg.keys)}
	w, err := stresslog.Create(vfs.Default, cfg.logName(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	batches := append([][]stresslog.Op(nil), c.acked...)
	for i, ops := range batches {
		w.Pending(uint64(i+1), ops)
		w.Acked(uint64(i + 1))
	}
	if c.inFlight != nil {
		w.Pending(uint64(len(batches)+1), c.inFlight)
		batches = append(batches, c.inFlight)
	}
	w.Close()
	db, err := shale.Open(cfg.dbDir(), cfg.dbOptions())
	if err != nil {
		t.Fatal(err)
	}
	if c.unlogged != nil {
		batches = append(batches, c.unlogged)
		c.write = append(c.write, len(batches))
	}
	for _, n := range c.write {
		ops := batches[n-1]
		if c.partial && n == len(batches) && c.inFlight != nil {
			ops = ops[:1]
		}
		b := db.NewBatch()
		id := batchID{1, 0, uint64(n)}
		for _, op := range ops {
			switch op.Kind {
			case stresslog.OpPut:
				b.Put(stressKey(nil, op.Key), stressValue(nil, op.Key, id, int(op.Arg)))
			case stresslog.OpDelete:
				b.Delete(stressKey(nil, op.Key))
			case stresslog.OpDeleteRange:
				b.DeleteRange(stressKey(nil, op.Key), stressKey(nil, op.Arg))
			}
		}
		if err := db.Write(b, nil); err != nil {
			t.Fatal(err)
		}
	}
	if c.damage {
		v, err := db.Get(stressKey(nil, 5), nil)
		if err != nil {
			t.Fatal(err)
		}
		v[len(v)-1] ^= 1
		if err := db.Put(stressKey(nil, 5), v, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return r, r.verify(1)
}

func put(k, n uint32) stresslog.Op { return stresslog.Op{Kind: stresslog.OpPut, Key: k, Arg: n} }
func del(k uint32) stresslog.Op    { return stresslog.Op{Kind: stresslog.OpDelete, Key: k} }
func delRange(a, b uint32) stresslog.Op {
	return stresslog.Op{Kind: stresslog.OpDeleteRange, Key: a, Arg: b}
}

// TestStressVerifier checks that the verifier accepts exactly the allowed
// outcomes and names each violation.
func TestStressVerifier(t *testing.T) {
	acked := [][]stresslog.Op{
		{put(1, 40), put(2, 40), put(3, 40), put(9, 10)},
		{del(2), put(4, 50), delRange(3, 5), put(4, 60)},
		{put(5, 40)},
	}
	inFlight := []stresslog.Op{put(6, 40), put(1, 70), delRange(9, 10)}
	for _, tc := range []struct {
		name string
		c    verifierCase
		want string // "" = no violation
		// applied, absent are the expected in-flight outcomes counted.
		applied, absent int
	}{
		{"all acked", verifierCase{acked: acked, write: []int{1, 2, 3}}, "", 0, 0},
		{"in flight absent", verifierCase{acked: acked, inFlight: inFlight, write: []int{1, 2, 3}}, "", 0, 1},
		{"in flight applied", verifierCase{acked: acked, inFlight: inFlight, write: []int{1, 2, 3, 4}}, "", 1, 0},
		{"lost last batch", verifierCase{acked: acked, write: []int{1, 2}}, "an acknowledged write is lost: key k0000005", 0, 0},
		{"lost middle batch", verifierCase{acked: acked, write: []int{1, 3}},
			"an acknowledged delete is lost, or a write no batch made shows: key k0000002", 0, 0},
		{"older value", verifierCase{acked: [][]stresslog.Op{{put(1, 40)}, {put(1, 50)}}, write: []int{1}},
			"an acknowledged write is lost (an older value shows): key k0000001 (writer 0; 2 batches of this child acked, no batch in flight): expected the value of batch 1.0.2 (50 bytes), found the value of batch 1.0.1 (40 bytes)", 0, 0},
		{"lost delete", verifierCase{acked: acked[:2], write: []int{1}}, "an acknowledged delete is lost", 0, 0},
		{"in flight in part", verifierCase{acked: acked, inFlight: inFlight, write: []int{1, 2, 3, 4}, partial: true},
			"batch 1.0.4, in flight, was applied in part: key k0000006 holds its write, but key k0000001", 0, 0},
		{"phantom batch", verifierCase{acked: acked, write: []int{1, 2, 3}, unlogged: []stresslog.Op{put(7, 30)}},
			"a write no batch made shows: key k0000007", 0, 0},
		{"phantom beside in flight", verifierCase{acked: acked, inFlight: inFlight, write: []int{1, 2, 3, 4}, unlogged: []stresslog.Op{put(8, 30)}},
			"key k0000008 (writer 0; 3 batches of this child acked, batch 1.0.4 in flight, which does not explain it)", 0, 0},
		{"damaged value", verifierCase{acked: acked, write: []int{1, 2, 3}, damage: true},
			"a damaged value: key k0000005 (writer 0; 3 batches of this child acked, no batch in flight): expected the value of batch 1.0.3 (40 bytes), found a damaged or misplaced value naming batch 1.0.3", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := runVerifierCase(t, tc.c)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if err == nil && (r.stats.applied != tc.applied || r.stats.absent != tc.absent) {
				t.Fatalf("in flight applied %d absent %d, want %d %d", r.stats.applied, r.stats.absent, tc.applied, tc.absent)
			}
		})
	}
}
