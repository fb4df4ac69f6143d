// Package kvserver is the replicated key-value service of raftstore: a Node
// runs hashicorp/raft over TCP with a raftstore.Store as its log and stable
// store and a raftstore.FSM as its state machine, and serves an HTTP API
// (Handler) whose reads and writes go through the leader. cmd/shale-server
// is its command; docs/replication.md describes both.
//
// Keys of the FSM: 'u' | user key for the user's pairs, 'm' | "node/" | id
// for each node's HTTP address (written by a node when it becomes leader,
// and by the leader when a node joins), which is how followers find the
// leader's HTTP address to forward to.
package kvserver

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/shaledb/shale"
	"github.com/shaledb/shale/raftstore"
	"github.com/shaledb/shale/vfs"
)

// Config configures a Node.
type Config struct {
	// ID is the node's raft server ID, unique in the cluster. Required.
	ID string
	// RaftAddr is the TCP address the raft transport binds and advertises
	// (host:port, e.g. 127.0.0.1:7001). Required.
	RaftAddr string
	// HTTPAddr is the address the node's HTTP API is reachable at, which
	// other nodes forward to when this node leads. Required.
	HTTPAddr string
	// Dir holds the node's log store (Dir/raft) and FSM (Dir/fsm). Required.
	Dir string
	// FS is the file system of the shale DBs. Default nil: the OS.
	FS vfs.FS
	// SnapshotDir is where raft's FileSnapshotStore keeps snapshots (on
	// the OS file system, as raft writes it). Default Dir/snapshots.
	SnapshotDir string
	// Bootstrap makes this node the first member of a new cluster. A node
	// that already has raft state ignores it.
	Bootstrap bool
	// Raft is the raft configuration (timeouts, snapshot thresholds); its
	// LocalID and Logger are set by Start. Default nil: raft.DefaultConfig().
	Raft *raft.Config
	// ApplyTimeout bounds each write and read barrier. Default 5 s.
	ApplyTimeout time.Duration
	// LogOutput receives raft's log (level INFO, or Raft.LogLevel when set).
	// Default nil: os.Stderr.
	LogOutput io.Writer
	// NoSync is raftstore.Options.NoSync for the log store: unsafe, for
	// comparisons only. Default false.
	NoSync bool
	// LogStore, when set, replaces the shale log and stable store (to
	// compare with another store, such as raft-boltdb): it opens the store
	// given the node's directory; Shutdown closes it. Default nil: a
	// raftstore.Store in Dir/raft.
	LogStore func(dir string) (LogStore, error)
}

// LogStore is a raft log and stable store that can be closed, as
// Config.LogStore opens it.
type LogStore interface {
	raft.LogStore
	raft.StableStore
	Close() error
}

// Node is one member of the replicated service.
type Node struct {
	cfg   Config
	raft  *raft.Raft
	store LogStore
	fsm   *raftstore.FSM
	trans *raft.NetworkTransport
	done  chan struct{}
	wg    sync.WaitGroup

	shutdownOnce sync.Once
	shutdownErr  error
}

// Start opens the node's stores, starts raft and, with cfg.Bootstrap on a
// fresh node, bootstraps a one-node cluster.
func Start(cfg Config) (*Node, error) {
	if cfg.ID == "" || cfg.RaftAddr == "" || cfg.HTTPAddr == "" || cfg.Dir == "" {
		return nil, fmt.Errorf("shale: kvserver: Config.ID, RaftAddr, HTTPAddr and Dir are required: %w", shale.ErrInvalidArgument)
	}
	if cfg.ApplyTimeout <= 0 {
		cfg.ApplyTimeout = 5 * time.Second
	}
	if cfg.LogOutput == nil {
		cfg.LogOutput = os.Stderr
	}
	fs := cfg.FS
	if fs == nil {
		fs = vfs.Default
	}
	if cfg.SnapshotDir == "" {
		cfg.SnapshotDir = filepath.Join(cfg.Dir, "snapshots")
	}
	rc := raft.DefaultConfig()
	if cfg.Raft != nil {
		c := *cfg.Raft
		rc = &c
	}
	rc.LocalID = raft.ServerID(cfg.ID)
	level := hclog.Info
	if rc.LogLevel != "" {
		level = hclog.LevelFromString(rc.LogLevel)
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "raft-" + cfg.ID, Level: level, Output: cfg.LogOutput})
	rc.Logger = logger

	n := &Node{cfg: cfg, done: make(chan struct{})}
	var err error
	dbOpts := &shale.Options{FS: cfg.FS}
	if cfg.LogStore != nil {
		n.store, err = cfg.LogStore(cfg.Dir)
	} else {
		n.store, err = raftstore.Open(fs.PathJoin(cfg.Dir, "raft"), &raftstore.Options{DB: dbOpts, NoSync: cfg.NoSync})
	}
	if err != nil {
		return nil, err
	}
	if n.fsm, err = raftstore.OpenFSM(fs.PathJoin(cfg.Dir, "fsm"), &raftstore.FSMOptions{DB: dbOpts}); err != nil {
		n.store.Close()
		return nil, err
	}
	fail := func(err error) (*Node, error) {
		if n.trans != nil {
			n.trans.Close()
		}
		n.fsm.Close()
		n.store.Close()
		return nil, err
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.SnapshotDir, 2, logger)
	if err != nil {
		return fail(fmt.Errorf("shale: kvserver: snapshot store: %w", err))
	}
	addr, err := net.ResolveTCPAddr("tcp", cfg.RaftAddr)
	if err != nil {
		return fail(fmt.Errorf("shale: kvserver: raft address %q: %w", cfg.RaftAddr, err))
	}
	if n.trans, err = raft.NewTCPTransportWithLogger(cfg.RaftAddr, addr, 3, 5*time.Second, logger); err != nil {
		return fail(fmt.Errorf("shale: kvserver: raft transport: %w", err))
	}
	if cfg.Bootstrap {
		has, err := raft.HasExistingState(n.store, n.store, snaps)
		if err != nil {
			return fail(err)
		}
		if !has {
			conf := raft.Configuration{Servers: []raft.Server{{ID: rc.LocalID, Address: n.trans.LocalAddr()}}}
			if err := raft.BootstrapCluster(rc, n.store, n.store, snaps, n.trans, conf); err != nil {
				return fail(fmt.Errorf("shale: kvserver: bootstrap: %w", err))
			}
		}
	}
	if n.raft, err = raft.NewRaft(rc, n.fsm, n.store, n.store, snaps, n.trans); err != nil {
		return fail(fmt.Errorf("shale: kvserver: start raft: %w", err))
	}
	n.wg.Add(1)
	go n.registerWhenLeader()
	return n, nil
}

// registerWhenLeader records this node's HTTP address in the FSM each time
// it becomes leader, so that followers can forward to it.
func (n *Node) registerWhenLeader() {
	defer n.wg.Done()
	for {
		select {
		case <-n.done:
			return
		case isLeader := <-n.raft.LeaderCh():
			if !isLeader {
				continue
			}
			if v, err := n.fsmGet(metaKey(n.cfg.ID)); err == nil && string(v) == n.cfg.HTTPAddr {
				continue
			}
			n.raft.Apply(raftstore.EncodePut(metaKey(n.cfg.ID), []byte(n.cfg.HTTPAddr)), n.cfg.ApplyTimeout).Error()
		}
	}
}

// Raft returns the node's raft instance.
func (n *Node) Raft() *raft.Raft { return n.raft }

// FSM returns the node's state machine (its reads are local, not
// linearizable).
func (n *Node) FSM() *raftstore.FSM { return n.fsm }

// Store returns the node's log and stable store.
func (n *Node) Store() LogStore { return n.store }

// Shutdown stops raft and closes the transport and the stores; later calls
// return the first call's result.
func (n *Node) Shutdown() error {
	n.shutdownOnce.Do(func() {
		close(n.done)
		err := n.raft.Shutdown().Error()
		n.wg.Wait()
		n.trans.Close()
		n.shutdownErr = errors.Join(err, n.fsm.Close(), n.store.Close())
	})
	return n.shutdownErr
}

func userKey(k []byte) []byte  { return append([]byte{'u'}, k...) }
func metaKey(id string) []byte { return append([]byte("mnode/"), id...) }

func (n *Node) fsmGet(k []byte) ([]byte, error) { return n.fsm.Get(k) }

// apply submits a command and waits for it to be applied. raft.ErrNotLeader
// means it was not submitted (safe to forward); any other error leaves the
// outcome unknown.
func (n *Node) apply(cmd []byte) error {
	f := n.raft.Apply(cmd, n.cfg.ApplyTimeout)
	if err := f.Error(); err != nil {
		return err
	}
	if err, ok := f.Response().(error); ok && err != nil {
		return err
	}
	return nil
}

// Put sets key to value through the log; the node must be the leader
// (raft.ErrNotLeader otherwise).
func (n *Node) Put(key, value []byte) error {
	return n.apply(raftstore.EncodePut(userKey(key), value))
}

// Delete deletes key through the log; the node must be the leader.
func (n *Node) Delete(key []byte) error {
	return n.apply(raftstore.EncodeDelete(userKey(key)))
}

// readBarrier makes the next local read linearizable: a barrier entry
// commits only while this node leads (so no other leader has committed
// anything newer), and returns once every entry before it is applied.
func (n *Node) readBarrier() error {
	return n.raft.Barrier(n.cfg.ApplyTimeout).Error()
}

// Get returns key's value, linearizably; the node must be the leader.
func (n *Node) Get(key []byte) (value []byte, found bool, err error) {
	if err := n.readBarrier(); err != nil {
		return nil, false, err
	}
	v, err := n.fsm.Get(userKey(key))
	if errors.Is(err, shale.ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

// Scan returns up to limit pairs with from <= key < to (to empty: no
// bound), linearizably; the node must be the leader.
func (n *Node) Scan(from, to []byte, limit int) ([]raftstore.KV, error) {
	if err := n.readBarrier(); err != nil {
		return nil, err
	}
	upper := []byte{'v'}
	if len(to) > 0 {
		upper = userKey(to)
	}
	kvs, err := n.fsm.Scan(userKey(from), upper, limit)
	for i := range kvs {
		kvs[i].Key = kvs[i].Key[1:]
	}
	return kvs, err
}

// Join adds a voter and records its HTTP address; the node must be the
// leader.
func (n *Node) Join(id, raftAddr, httpAddr string) error {
	if err := n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(raftAddr), 0, n.cfg.ApplyTimeout).Error(); err != nil {
		return err
	}
	return n.apply(raftstore.EncodePut(metaKey(id), []byte(httpAddr)))
}

// Leader returns the leader's ID and HTTP address as this node knows them
// ("" when unknown).
func (n *Node) Leader() (id, httpAddr string) {
	_, lid := n.raft.LeaderWithID()
	if lid == "" {
		return "", ""
	}
	v, err := n.fsmGet(metaKey(string(lid)))
	if err != nil {
		return string(lid), ""
	}
	return string(lid), string(v)
}

// IsLeader reports whether this node believes it leads.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }
