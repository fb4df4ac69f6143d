package kvserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"syscall"

	"github.com/hashicorp/raft"
)

// forwardedHeader marks a request a follower forwarded, so that a node that
// is not the leader either does not forward it again.
const forwardedHeader = "X-Shale-Forwarded"

// maxValueSize bounds a PUT body.
const maxValueSize = 16 << 20

// Handler returns the node's HTTP API:
//
//	PUT    /kv/{key}           body = value; 204 once applied
//	GET    /kv/{key}           200 with the value, 404 when absent
//	DELETE /kv/{key}           204 once applied
//	GET    /scan?from=&to=&limit=  200 with [{"key":..,"value":..}] (base64 in JSON)
//	POST   /join?id=&raft=&http=   adds a voter
//	GET    /status             {"id","state","leader","leader_http"}
//
// Reads and writes are served by the leader; a follower forwards them to
// the leader (a reverse proxy), or answers 503 when no leader is known.
// A failed write's outcome is unknown (it may be applied) unless the answer
// carries OutcomeHeader: not-applied.
func (n *Node) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /kv/{key}", n.leaderOnly(func(w http.ResponseWriter, r *http.Request) {
		v, err := io.ReadAll(io.LimitReader(r.Body, maxValueSize+1))
		if err == nil && len(v) > maxValueSize {
			err = fmt.Errorf("value larger than %d bytes", maxValueSize)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// respond may forward the request: give it the body again.
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(v)), int64(len(v))
		n.respond(w, r, n.Put([]byte(r.PathValue("key")), v))
	}))
	mux.HandleFunc("DELETE /kv/{key}", n.leaderOnly(func(w http.ResponseWriter, r *http.Request) {
		n.respond(w, r, n.Delete([]byte(r.PathValue("key"))))
	}))
	mux.HandleFunc("GET /kv/{key}", n.leaderOnly(func(w http.ResponseWriter, r *http.Request) {
		v, found, err := n.Get([]byte(r.PathValue("key")))
		if err != nil {
			n.respond(w, r, err)
			return
		}
		if !found {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(v)
	}))
	mux.HandleFunc("GET /scan", n.leaderOnly(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit := 0
		if s := q.Get("limit"); s != "" {
			var err error
			if limit, err = strconv.Atoi(s); err != nil || limit < 0 {
				http.Error(w, "limit must be a non-negative integer", http.StatusBadRequest)
				return
			}
		}
		kvs, err := n.Scan([]byte(q.Get("from")), []byte(q.Get("to")), limit)
		if err != nil {
			n.respond(w, r, err)
			return
		}
		type pair struct {
			Key   []byte `json:"key"`
			Value []byte `json:"value"`
		}
		out := make([]pair, len(kvs))
		for i, kv := range kvs {
			out[i] = pair{kv.Key, kv.Value}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}))
	mux.HandleFunc("POST /join", n.leaderOnly(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		id, raftAddr, httpAddr := q.Get("id"), q.Get("raft"), q.Get("http")
		if id == "" || raftAddr == "" || httpAddr == "" {
			http.Error(w, "join needs id, raft and http", http.StatusBadRequest)
			return
		}
		n.respond(w, r, n.Join(id, raftAddr, httpAddr))
	}))
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		id, addr := n.Leader()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{
			"id": n.cfg.ID, "state": n.raft.State().String(), "leader": id, "leader_http": addr,
		})
	})
	return mux
}

// leaderOnly serves h on the leader and forwards the request elsewhere.
func (n *Node) leaderOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if n.IsLeader() {
			h(w, r)
			return
		}
		n.forward(w, r)
	}
}

// forward proxies r to the leader, once.
func (n *Node) forward(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(forwardedHeader) != "" {
		notApplied(w, "not the leader (request already forwarded)")
		return
	}
	_, addr := n.Leader()
	if addr == "" || addr == n.cfg.HTTPAddr {
		notApplied(w, "no leader known")
		return
	}
	target := &url.URL{Scheme: "http", Host: addr}
	p := httputil.NewSingleHostReverseProxy(target)
	p.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if errors.Is(err, syscall.ECONNREFUSED) {
			notApplied(w, "forwarding to the leader: "+err.Error())
			return
		}
		http.Error(w, "forwarding to the leader: "+err.Error(), http.StatusBadGateway)
	}
	r.Header.Set(forwardedHeader, n.cfg.ID)
	p.ServeHTTP(w, r)
}

// OutcomeHeader is set to "not-applied" on a 503 answer to a write that
// certainly did not and will not take effect (no leader known, the leader
// unreachable, the entry never entered the log): a client may retry it
// freely. Any other failed write may have been applied.
const OutcomeHeader = "X-Shale-Outcome"

// notApplied answers 503 for a request that was not carried out.
func notApplied(w http.ResponseWriter, msg string) {
	w.Header().Set(OutcomeHeader, "not-applied")
	http.Error(w, msg, http.StatusServiceUnavailable)
}

// respond answers a write or read: 204, a forward when the node turned out
// not to lead before submitting, or 503 (outcome unknown for writes).
func (n *Node) respond(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, raft.ErrNotLeader):
		n.forward(w, r)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		notApplied(w, err.Error()) // never entered the log
	default:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	}
}
