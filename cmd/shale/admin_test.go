package main

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// run executes the tool with args and returns what it printed.
func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRootCmd(&out, &errOut)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, _, err := run(t, args...)
	if err != nil {
		t.Fatalf("shale %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func TestPutGetDelete(t *testing.T) {
	db := filepath.Join(testdir.New(t), "db")
	mustRun(t, "put", "--db", db, "hello", "world")
	mustRun(t, "put", "--db", db, "k 2", "v with spaces")
	if got := mustRun(t, "get", "--db", db, "hello"); got != "world\n" {
		t.Fatalf("get hello = %q, want %q", got, "world\n")
	}
	if got := mustRun(t, "get", "--db", db, "k 2"); got != "v with spaces\n" {
		t.Fatalf("get %q = %q", "k 2", got)
	}
	mustRun(t, "put", "--db", db, "hello", "again")
	if got := mustRun(t, "get", "--db", db, "hello"); got != "again\n" {
		t.Fatalf("get after overwrite = %q", got)
	}
	mustRun(t, "delete", "--db", db, "hello")
	out, _, err := run(t, "get", "--db", db, "hello")
	if !errors.Is(err, errNotFound) || out != "" {
		t.Fatalf("get deleted key: out %q err %v, want errNotFound", out, err)
	}
	var msg bytes.Buffer
	reportError(&msg, err)
	if msg.String() != "not found\n" {
		t.Fatalf("missing key reported as %q", msg.String())
	}
}

func TestHexRoundTrip(t *testing.T) {
	db := filepath.Join(testdir.New(t), "db")
	key := []byte{0x00, 0xff, 0x10, '\n', ' '}
	value := []byte{0xde, 0xad, 0x00, 0xbe, 0xef}
	mustRun(t, "put", "--db", db, "--hex", hex.EncodeToString(key), "0x"+hex.EncodeToString(value))
	if got := mustRun(t, "get", "--db", db, "--hex", hex.EncodeToString(key)); got != hex.EncodeToString(value)+"\n" {
		t.Fatalf("get --hex = %q", got)
	}
	want := hex.EncodeToString(key) + " : " + hex.EncodeToString(value) + "\n"
	if got := mustRun(t, "scan", "--db", db, "--hex"); got != want {
		t.Fatalf("scan --hex = %q, want %q", got, want)
	}
	if _, _, err := run(t, "get", "--db", db, "--hex", "zz"); err == nil || !strings.Contains(err.Error(), "not valid hex") {
		t.Fatalf("bad hex: err %v", err)
	}
}

func TestAdminErrors(t *testing.T) {
	dir := testdir.New(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"get", "k"}, "--db is required"},
		{[]string{"get", "--db", filepath.Join(dir, "missing"), "k"}, "opening"},
		{[]string{"put", "--db", dir, "onlykey"}, "accepts 2 arg"},
		{[]string{"scan", "--db", dir, "--limit", "-1"}, "--limit"},
		{[]string{"deleterange", "--db", dir, "b", "a"}, "sorts after"},
	}
	for _, c := range cases {
		_, _, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("shale %v: err %v, want one containing %q", c.args, err, c.want)
		}
	}
	var msg bytes.Buffer
	reportError(&msg, errors.New("boom"))
	if msg.String() != "shale: boom\n" {
		t.Errorf("reportError = %q", msg.String())
	}
}

// TestAdminModel applies random puts, deletes and range deletes through the
// tool and checks get and scan (with bounds, limits and direction) against a
// map.
func TestAdminModel(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("seed %d", seed)
	db := filepath.Join(testdir.New(t), "db")
	model := map[string]string{}
	key := func() string { return fmt.Sprintf("k%02d", rng.IntN(30)) }
	mustRun(t, "put", "--db", db, "k00", "first")
	model["k00"] = "first"
	for i := 0; i < 40; i++ {
		switch op := rng.IntN(10); {
		case op < 6:
			k, v := key(), fmt.Sprintf("v%d", i)
			mustRun(t, "put", "--db", db, k, v)
			model[k] = v
		case op < 8:
			k := key()
			mustRun(t, "delete", "--db", db, k)
			delete(model, k)
		case op < 9:
			a, b := key(), key()
			if a > b {
				a, b = b, a
			}
			mustRun(t, "deleterange", "--db", db, a, b)
			for k := range model {
				if k >= a && k < b {
					delete(model, k)
				}
			}
		default:
			k := key()
			out, _, err := run(t, "get", "--db", db, k)
			v, ok := model[k]
			if ok && (err != nil || out != v+"\n") || !ok && !errors.Is(err, errNotFound) {
				t.Fatalf("seed %d: get %s = %q, %v; model has %q, %v", seed, k, out, err, v, ok)
			}
		}
	}
	keys := make([]string, 0, len(model))
	for k := range model {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i := 0; i < 8; i++ {
		from, to := key(), key()
		limit := rng.IntN(5)
		reverse := rng.IntN(2) == 1
		args := []string{"scan", "--db", db, "--from", from, "--to", to, "--limit", fmt.Sprint(limit)}
		if reverse {
			args = append(args, "--reverse")
		}
		var want strings.Builder
		var sel []string
		for _, k := range keys {
			if k >= from && k < to {
				sel = append(sel, k)
			}
		}
		if reverse {
			slices.Reverse(sel)
		}
		for j, k := range sel {
			if limit > 0 && j == limit {
				break
			}
			fmt.Fprintf(&want, "%s : %s\n", k, model[k])
		}
		if got := mustRun(t, args...); got != want.String() {
			t.Fatalf("seed %d: shale %v:\n%s\nwant:\n%s", seed, args, got, want.String())
		}
	}
	var want strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&want, "%s : %s\n", k, model[k])
	}
	if got := mustRun(t, "scan", "--db", db); got != want.String() {
		t.Fatalf("seed %d: full scan:\n%s\nwant:\n%s", seed, got, want.String())
	}
}
