package kvserver

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shaledb/shale/vfs"
)

// testNode is one node of a testCluster: its shale DBs on its own MemFS
// (so that a kill can keep only what was synced), raft's snapshots in an
// OS temporary directory, and its HTTP API on a loopback port.
type testNode struct {
	id, raftAddr, httpAddr string
	fs                     *vfs.MemFS // nil: the OS, in dir
	dir                    string
	snapDir                string
	node                   *Node
	srv                    *http.Server
}

// testCluster is a set of nodes in this test process, on loopback.
type testCluster struct {
	t     testing.TB
	nodes []*testNode
	// tune adjusts each node's raft configuration.
	tune func(*raft.Config)
	// onOS puts the nodes' stores on the OS file system (kill is then
	// not available) and logStore, when set, replaces the shale store.
	onOS     bool
	logStore func(dir string) (LogStore, error)
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// newTestCluster starts n nodes: the first bootstraps, the others join
// through it.
func newTestCluster(t testing.TB, n int, tune func(*raft.Config)) *testCluster {
	return startTestCluster(&testCluster{t: t, tune: tune}, n)
}

// startTestCluster starts n nodes of c.
func startTestCluster(c *testCluster, n int) *testCluster {
	t := c.t
	for i := 0; i < n; i++ {
		tn := &testNode{
			id:       "n" + strconv.Itoa(i),
			raftAddr: freeAddr(t),
			httpAddr: freeAddr(t),
			dir:      "/node",
			snapDir:  t.TempDir(),
		}
		if c.onOS {
			tn.dir = t.TempDir()
		} else {
			tn.fs = vfs.NewMem()
		}
		c.nodes = append(c.nodes, tn)
		c.start(i, i == 0)
		if i == 0 {
			c.waitLeader(10 * time.Second)
			continue
		}
		leader := c.waitLeader(10 * time.Second)
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := leader.node.Join(tn.id, tn.raftAddr, tn.httpAddr)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("join %s: %v", tn.id, err)
			}
			time.Sleep(50 * time.Millisecond)
			leader = c.waitLeader(10 * time.Second)
		}
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(i)
		}
	})
	return c
}

// fastRaft is a raft configuration with short timeouts for loopback.
func fastRaft() *raft.Config {
	rc := raft.DefaultConfig()
	rc.HeartbeatTimeout = 400 * time.Millisecond
	rc.ElectionTimeout = 400 * time.Millisecond
	rc.LeaderLeaseTimeout = 200 * time.Millisecond
	rc.CommitTimeout = 10 * time.Millisecond
	rc.LogLevel = "OFF"
	return rc
}

// start starts node i (again) on its file system and addresses.
func (c *testCluster) start(i int, bootstrap bool) {
	tn := c.nodes[i]
	rc := fastRaft()
	if c.tune != nil {
		c.tune(rc)
	}
	var logOut io.Writer = io.Discard
	if os.Getenv("SHALE_RAFT_LOG") != "" {
		logOut = os.Stderr
		rc.LogLevel = "INFO"
	}
	var err error
	for attempt := 0; ; attempt++ { // the port may linger a moment after a stop
		cfg := Config{
			ID: tn.id, RaftAddr: tn.raftAddr, HTTPAddr: tn.httpAddr, Dir: tn.dir,
			SnapshotDir: tn.snapDir, Bootstrap: bootstrap, Raft: rc,
			ApplyTimeout: 2 * time.Second, LogOutput: logOut, LogStore: c.logStore,
		}
		if tn.fs != nil {
			cfg.FS = tn.fs
		}
		tn.node, err = Start(cfg)
		if err == nil || attempt == 50 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		c.t.Fatalf("start %s: %v", tn.id, err)
	}
	var ln net.Listener
	for attempt := 0; ; attempt++ {
		ln, err = net.Listen("tcp", tn.httpAddr)
		if err == nil || attempt == 50 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		c.t.Fatalf("listen %s: %v", tn.httpAddr, err)
	}
	tn.srv = &http.Server{Handler: tn.node.Handler()}
	go tn.srv.Serve(ln)
}

// stop shuts node i down (a no-op when it is down).
func (c *testCluster) stop(i int) {
	tn := c.nodes[i]
	if tn.node == nil {
		return
	}
	tn.srv.Close()
	if err := tn.node.Shutdown(); err != nil {
		c.t.Logf("shutdown %s: %v", tn.id, err)
	}
	tn.node = nil
}

// kill stops node i as a power cut would: raft stops, and the node's file
// system keeps only what was synced (a MemFS crash clone taken before the
// DBs are closed). raft's snapshots, on the OS, are kept whole.
func (c *testCluster) kill(i int) {
	tn := c.nodes[i]
	tn.srv.Close()
	tn.node.raft.Shutdown().Error()
	crashed := tn.fs.CrashClone()
	tn.node.Shutdown()
	tn.node = nil
	tn.fs = crashed
}

// waitLeader returns the node that leads, once one does.
func (c *testCluster) waitLeader(timeout time.Duration) *testNode {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, tn := range c.nodes {
			if tn.node != nil && tn.node.IsLeader() {
				return tn
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("no leader after %v", timeout)
	return nil
}

// waitConverged waits until every running node's FSM holds the same pairs
// as the leader's after a barrier, and returns them.
func (c *testCluster) waitConverged(timeout time.Duration) map[string]string {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		leader := c.waitLeader(timeout)
		if err := leader.node.Raft().Barrier(2 * time.Second).Error(); err != nil {
			last = err
			continue
		}
		want := fsmPairs(c.t, leader.node)
		same := true
		for _, tn := range c.nodes {
			if tn.node == nil || tn == leader {
				continue
			}
			got := fsmPairs(c.t, tn.node)
			if !mapsEqual(got, want) {
				same = false
				last = errors.New(tn.id + " differs from the leader " + leader.id)
			}
		}
		if same {
			return want
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("the nodes did not converge in %v: %v", timeout, last)
	return nil
}

// fsmPairs returns every pair of n's FSM (user and meta keys), read locally.
func fsmPairs(t testing.TB, n *Node) map[string]string {
	kvs, err := n.FSM().Scan(nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = string(kv.Value)
	}
	return m
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
