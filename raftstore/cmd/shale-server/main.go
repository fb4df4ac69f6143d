// Command shale-server runs one node of the replicated shale key-value
// service (raftstore/kvserver): raft over TCP, shale as the log store and
// the state machine, and an HTTP API. docs/replication.md shows how to run
// a 3-node cluster on one machine.
//
//	shale-server --id n1 --dir /tmp/n1 --raft 127.0.0.1:7001 --http 127.0.0.1:8001 --bootstrap
//	shale-server --id n2 --dir /tmp/n2 --raft 127.0.0.1:7002 --http 127.0.0.1:8002 --join 127.0.0.1:8001
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shaledb/shale/raftstore/kvserver"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "shale-server:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fl := flag.NewFlagSet("shale-server", flag.ContinueOnError)
	id := fl.String("id", "", "this node's raft server ID (required)")
	dir := fl.String("dir", "", "data directory (required)")
	raftAddr := fl.String("raft", "127.0.0.1:7001", "raft TCP address to bind and advertise")
	httpAddr := fl.String("http", "127.0.0.1:8001", "HTTP address to serve the API on")
	bootstrap := fl.Bool("bootstrap", false, "bootstrap a new cluster with this node as its only member")
	join := fl.String("join", "", "HTTP address of a member to join through (host:port)")
	snapThreshold := fl.Uint64("snapshot_threshold", 8192, "log entries between snapshots (raft's SnapshotThreshold)")
	logLevel := fl.String("log_level", "INFO", "raft log level")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *id == "" || *dir == "" {
		return errors.New("--id and --dir are required")
	}
	if *bootstrap && *join != "" {
		return errors.New("--bootstrap and --join exclude each other")
	}
	rc := raft.DefaultConfig()
	rc.SnapshotThreshold = *snapThreshold
	rc.LogLevel = *logLevel
	node, err := kvserver.Start(kvserver.Config{
		ID: *id, RaftAddr: *raftAddr, HTTPAddr: *httpAddr, Dir: *dir,
		Bootstrap: *bootstrap, Raft: rc,
	})
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: *httpAddr, Handler: node.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	if *join != "" {
		if err := joinCluster(*join, *id, *raftAddr, *httpAddr); err != nil {
			srv.Close()
			node.Shutdown()
			return err
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case err = <-errc:
	case <-sig:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		srv.Shutdown(ctx)
		cancel()
	}
	return errors.Join(err, node.Shutdown())
}

// joinCluster asks the member at addr to add this node, retrying while the
// cluster has no leader.
func joinCluster(addr, id, raftAddr, httpAddr string) error {
	u := fmt.Sprintf("http://%s/join?id=%s&raft=%s&http=%s", addr,
		url.QueryEscape(id), url.QueryEscape(raftAddr), url.QueryEscape(httpAddr))
	var last error
	for attempt := 0; attempt < 30; attempt++ {
		resp, err := http.Post(u, "", nil)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return nil
			}
			err = fmt.Errorf("join through %s: %s: %s", addr, resp.Status, body)
		}
		last = err
		time.Sleep(time.Second)
	}
	return last
}
