package kvserver

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/hashicorp/raft"
)

// Operations of the linearizability history.
const (
	opGet = iota
	opPut
	opDelete
)

type kvInput struct {
	op         int
	key, value string
}

type kvOutput struct {
	value string
	found bool
}

// kvState is one key's state in the model (the history is partitioned by
// key).
type kvState struct {
	value   string
	present bool
}

// kvModel is porcupine's model of one register per key, with delete.
var kvModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(kvInput).key
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range byKey {
			out = append(out, ops)
		}
		return out
	},
	Init: func() interface{} { return kvState{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		s, in := state.(kvState), input.(kvInput)
		switch in.op {
		case opGet:
			out := output.(kvOutput)
			return out.found == s.present && out.value == s.value, s
		case opPut:
			return true, kvState{value: in.value, present: true}
		default:
			return true, kvState{}
		}
	},
	DescribeOperation: func(input, output interface{}) string {
		in := input.(kvInput)
		switch in.op {
		case opGet:
			out := output.(kvOutput)
			return fmt.Sprintf("get(%s) -> %q %v", in.key, out.value, out.found)
		case opPut:
			return fmt.Sprintf("put(%s, %s)", in.key, in.value)
		default:
			return fmt.Sprintf("delete(%s)", in.key)
		}
	},
}

// history records operations from many clients.
type history struct {
	mu  sync.Mutex
	ops []porcupine.Operation
	// acked counts the writes acknowledged, unknown the writes whose
	// outcome is unknown (recorded as returning at the end of time).
	acked, unknown, refused int
}

func (h *history) add(op porcupine.Operation) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// unknownReturn is the return time of an operation whose outcome is not
// known: it may take effect at any time after its call.
const unknownReturn = int64(1) << 62

// kvClient talks to the cluster through the HTTP API of random nodes.
type kvClient struct {
	id   int
	http *http.Client
	c    *testCluster
	rng  *rand.Rand
}

// do runs one operation against a random node and records it.
func (cl *kvClient) do(h *history, in kvInput) {
	tn := cl.c.nodes[cl.rng.IntN(len(cl.c.nodes))]
	url := "http://" + tn.httpAddr + "/kv/" + in.key
	var req *http.Request
	switch in.op {
	case opGet:
		req, _ = http.NewRequest(http.MethodGet, url, nil)
	case opPut:
		req, _ = http.NewRequest(http.MethodPut, url, strings.NewReader(in.value))
	default:
		req, _ = http.NewRequest(http.MethodDelete, url, nil)
	}
	call := time.Now().UnixNano()
	resp, err := cl.http.Do(req)
	var body []byte
	status := 0
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		status = resp.StatusCode
	}
	ret := time.Now().UnixNano()
	op := porcupine.Operation{ClientId: cl.id, Input: in, Call: call, Return: ret}
	if in.op == opGet {
		switch {
		case err == nil && status == http.StatusOK:
			op.Output = kvOutput{value: string(body), found: true}
		case err == nil && status == http.StatusNotFound:
			op.Output = kvOutput{}
		default:
			time.Sleep(20 * time.Millisecond)
			return // a failed read changed nothing: leave it out
		}
		h.add(op)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err == nil && status == http.StatusNoContent:
		h.acked++
	case errors.Is(err, syscall.ECONNREFUSED) || (err == nil && resp.Header.Get(OutcomeHeader) == "not-applied"):
		h.refused++ // never sent, or refused before the log: no effect
		time.Sleep(20 * time.Millisecond)
		return
	default:
		h.unknown++ // a timeout, 502 or 503: it may have been applied
		op.Return = unknownReturn
		time.Sleep(20 * time.Millisecond)
	}
	h.ops = append(h.ops, op)
}

// TestClusterLinearizableThroughLeaderAndFollowerKills runs concurrent
// clients (puts, deletes and reads of a few keys, sent to random nodes)
// against a 3-node cluster while the leader is killed (a crash clone: only
// synced bytes survive) and restarted, then a follower; then it reads every
// key, checks the history with porcupine, and checks that all three nodes
// hold the same pairs. SHALE_RAFT_LONG=1 runs longer with more kills.
func TestClusterLinearizableThroughLeaderAndFollowerKills(t *testing.T) {
	duration, rounds := 6*time.Second, 1
	if os.Getenv("SHALE_RAFT_LONG") != "" {
		duration, rounds = 60*time.Second, 5
	}
	c := newTestCluster(t, 3, nil)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	var h history
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	const clients = 4
	for i := 0; i < clients; i++ {
		cl := &kvClient{id: i, c: c, http: &http.Client{Timeout: 2 * time.Second}, rng: rand.New(rand.NewPCG(seed, uint64(i)))}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				in := kvInput{key: keys[cl.rng.IntN(len(keys))]}
				switch r := cl.rng.IntN(10); {
				case r < 5:
					in.op = opGet
				case r < 9:
					in.op, in.value = opPut, fmt.Sprintf("c%d-%d", cl.id, n)
				default:
					in.op = opDelete
				}
				cl.do(&h, in)
			}
		}()
	}

	phase := duration / time.Duration(2*rounds+1)
	for r := 0; r < rounds; r++ {
		time.Sleep(phase)
		leader := c.waitLeader(10 * time.Second)
		li := indexOf(c, leader)
		t.Logf("killing the leader %s", leader.id)
		c.kill(li)
		time.Sleep(phase / 2)
		c.start(li, false)
		time.Sleep(phase / 2)
		// A follower other than the node just restarted, when there is one.
		cur := indexOf(c, c.waitLeader(10*time.Second))
		fi := (cur + 1) % len(c.nodes)
		if fi == li {
			fi = (fi + 1) % len(c.nodes)
		}
		if fi == cur {
			fi = (fi + 1) % len(c.nodes)
		}
		t.Logf("killing the follower %s", c.nodes[fi].id)
		c.kill(fi)
		time.Sleep(phase / 2)
		c.start(fi, false)
	}
	time.Sleep(phase)
	close(stop)
	wg.Wait()

	// Final reads of every key, through the leader, go into the history.
	c.waitLeader(10 * time.Second)
	final := &kvClient{id: clients, c: c, http: &http.Client{Timeout: 5 * time.Second}, rng: rand.New(rand.NewPCG(seed, 99))}
	for _, k := range keys {
		before := len(h.ops)
		for attempt := 0; attempt < 50 && len(h.ops) == before; attempt++ {
			final.do(&h, kvInput{op: opGet, key: k})
		}
		if len(h.ops) == before {
			t.Fatalf("the final read of %s never succeeded", k)
		}
	}
	t.Logf("%d operations: %d writes acknowledged, %d unknown, %d refused", len(h.ops), h.acked, h.unknown, h.refused)
	if h.acked < 20 {
		t.Fatalf("only %d writes acknowledged: the cluster made no progress", h.acked)
	}
	res, info := porcupine.CheckOperationsVerbose(kvModel, h.ops, 30*time.Second)
	t.Logf("porcupine: %v", res)
	switch res {
	case porcupine.Illegal:
		path := "(not written)"
		if f, err := os.CreateTemp("", "shale-raft-history-*.html"); err == nil {
			porcupine.Visualize(kvModel, info, f)
			f.Close()
			path = f.Name()
		}
		t.Fatalf("the history is not linearizable (visualization: %s)", path)
	case porcupine.Unknown:
		t.Logf("porcupine timed out: linearizability not decided")
	}
	c.waitConverged(20 * time.Second)
}

func indexOf(c *testCluster, tn *testNode) int {
	for i, x := range c.nodes {
		if x == tn {
			return i
		}
	}
	return -1
}

// TestClusterInstallsSnapshotOnLaggingFollower stops a follower, writes
// until the leader has snapshotted and compacted its log past everything
// the follower has, restarts the follower, and checks that it catches up
// through an installed snapshot (its FSM's Restore) and then agrees.
func TestClusterInstallsSnapshotOnLaggingFollower(t *testing.T) {
	c := newTestCluster(t, 3, func(rc *raft.Config) {
		rc.SnapshotThreshold = 32
		rc.TrailingLogs = 8
		rc.SnapshotInterval = 100 * time.Millisecond
	})
	leader := c.waitLeader(10 * time.Second)
	lag := (indexOf(c, leader) + 1) % 3
	lagging := c.nodes[lag]
	lastBefore, _ := lagging.node.Store().LastIndex()
	c.stop(lag)

	for i := 0; i < 400; i++ {
		for attempt := 0; ; attempt++ {
			leader = c.waitLeader(10 * time.Second)
			err := leader.node.Put([]byte(fmt.Sprintf("key%04d", i)), []byte(fmt.Sprintf("value%d", i)))
			if err == nil {
				break
			}
			if attempt == 20 {
				t.Fatalf("put %d: %v", i, err)
			}
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		first, _ := c.waitLeader(10 * time.Second).node.Store().FirstIndex()
		if first > lastBefore+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader's log still starts at %d (the follower has up to %d): no snapshot compacted it", first, lastBefore)
		}
		time.Sleep(50 * time.Millisecond)
	}

	c.start(lag, false)
	want := c.waitConverged(30 * time.Second)
	if got := lagging.node.FSM().Restores(); got == 0 {
		t.Fatalf("the follower caught up without a snapshot installed")
	}
	if len(want) < 400 {
		t.Fatalf("the cluster holds %d pairs, want at least 400", len(want))
	}
	for i := 0; i < 400; i++ {
		k := fmt.Sprintf("ukey%04d", i)
		if want[k] != fmt.Sprintf("value%d", i) {
			t.Fatalf("%s = %q after catch-up", k, want[k])
		}
	}
}
