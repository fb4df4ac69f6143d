package kvserver

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// httpDo sends a request and returns the status and body.
func httpDo(t *testing.T, method, u, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHTTPAPIThroughFollower writes, reads, scans and deletes through a
// follower's HTTP API (forwarded to the leader), and checks the status
// and the refusals of bad requests.
func TestHTTPAPIThroughFollower(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitLeader(10 * time.Second)
	follower := c.nodes[(indexOf(c, leader)+1)%3]
	base := "http://" + follower.httpAddr
	for _, k := range []string{"apple", "banana", "cherry", "date"} {
		if st, body := httpDo(t, http.MethodPut, base+"/kv/"+k, "v-"+k); st != http.StatusNoContent {
			t.Fatalf("PUT %s: %d %s", k, st, body)
		}
	}
	if st, body := httpDo(t, http.MethodGet, base+"/kv/banana", ""); st != http.StatusOK || body != "v-banana" {
		t.Fatalf("GET banana: %d %q", st, body)
	}
	if st, _ := httpDo(t, http.MethodDelete, base+"/kv/banana", ""); st != http.StatusNoContent {
		t.Fatalf("DELETE banana: %d", st)
	}
	if st, _ := httpDo(t, http.MethodGet, base+"/kv/banana", ""); st != http.StatusNotFound {
		t.Fatalf("GET of a deleted key: %d, want 404", st)
	}
	st, body := httpDo(t, http.MethodGet, base+"/scan?from=b&to=d&limit=10", "")
	var pairs []struct{ Key, Value []byte }
	if st != http.StatusOK || json.Unmarshal([]byte(body), &pairs) != nil {
		t.Fatalf("scan: %d %s", st, body)
	}
	if len(pairs) != 1 || string(pairs[0].Key) != "cherry" || string(pairs[0].Value) != "v-cherry" {
		t.Fatalf("scan [b, d) = %s, want only cherry", body)
	}
	st, body = httpDo(t, http.MethodGet, base+"/scan?limit=2", "")
	if json.Unmarshal([]byte(body), &pairs) != nil || len(pairs) != 2 || string(pairs[0].Key) != "apple" {
		t.Fatalf("scan limit 2: %d %s", st, body)
	}
	if st, _ := httpDo(t, http.MethodGet, base+"/scan?limit=x", ""); st != http.StatusBadRequest {
		t.Fatalf("scan with a bad limit: %d, want 400", st)
	}
	if st, _ := httpDo(t, http.MethodPost, base+"/join?id=x", ""); st != http.StatusBadRequest {
		t.Fatalf("join without addresses: %d, want 400", st)
	}
	st, body = httpDo(t, http.MethodGet, base+"/status", "")
	var status map[string]string
	if st != http.StatusOK || json.Unmarshal([]byte(body), &status) != nil ||
		status["id"] != follower.id || status["state"] != "Follower" ||
		status["leader"] != leader.id || status["leader_http"] != leader.httpAddr {
		t.Fatalf("status of the follower: %d %s", st, body)
	}
	// A request already forwarded once is not forwarded again.
	req, _ := http.NewRequest(http.MethodGet, base+"/kv/apple", nil)
	req.Header.Set(forwardedHeader, "test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get(OutcomeHeader) != "not-applied" {
		t.Fatalf("a forwarded request at a follower: %d %q", resp.StatusCode, resp.Header.Get(OutcomeHeader))
	}
}
