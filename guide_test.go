package shale_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/testdir"
)

// The user's guide (docs/guide.md) is kept in sync with the code by these
// tests: its Go snippets must be code that go test compiles, and the option
// fields it names must exist.

const (
	guidePath         = "docs/guide.md"
	guideSnippetsPath = "guide_snippets_test.go"
)

// guideSnippet is one ```go block of the guide: its text, without the fences,
// and the line of its opening fence.
type guideSnippet struct {
	line int
	text string
}

// readGuideText reads a text file of the repository with "\n" line ends.
func readGuideText(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(data), "\r\n", "\n")
}

// guideSnippets returns the ```go blocks of a Markdown text.
func guideSnippets(t *testing.T, md string) []guideSnippet {
	t.Helper()
	var (
		out   []guideSnippet
		cur   []string
		start int
		in    bool
	)
	for i, line := range strings.Split(md, "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```go":
			in, start, cur = true, i+1, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			out = append(out, guideSnippet{line: start, text: strings.Join(cur, "\n")})
		case in:
			cur = append(cur, line)
		}
	}
	if in {
		t.Fatalf("%s:%d: a ```go block is never closed", guidePath, start)
	}
	return out
}

// guideFunctionBodies returns, by function name, the bodies of the functions
// named guide... in the Go file src, each line stripped of one leading tab
// (the snippets are written at the left margin).
func guideFunctionBodies(t *testing.T, src string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, guideSnippetsPath, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]string{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || fn.Body == nil || !strings.HasPrefix(fn.Name.Name, "guide") {
			continue
		}
		body := src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset]
		lines := strings.Split(body, "\n")
		for i, l := range lines {
			lines[i] = strings.TrimPrefix(l, "\t")
		}
		bodies[fn.Name.Name] = strings.Join(lines, "\n")
	}
	return bodies
}

// containsLines reports whether the lines of snippet appear, whole and in a
// row, in text: a snippet ending in "Size: 1" does not match "Size: 16".
func containsLines(text, snippet string) bool {
	return strings.Contains("\n"+text+"\n", "\n"+snippet+"\n")
}

// TestGuideSnippetsCompile checks that every ```go block of the guide is, verbatim,
// either top-level code of guide_snippets_test.go (types and methods) or part
// of the body of one of its guide... functions, so that go test compiles it;
// and that every guide... function holds a snippet, so that none is left
// behind when the guide changes.
func TestGuideSnippetsCompile(t *testing.T) {
	snippets := guideSnippets(t, readGuideText(t, guidePath))
	src := readGuideText(t, guideSnippetsPath)
	bodies := guideFunctionBodies(t, src)
	if len(snippets) < 20 || len(bodies) < 20 {
		t.Fatalf("%d snippets in %s and %d guide functions in %s: the extraction is broken",
			len(snippets), guidePath, len(bodies), guideSnippetsPath)
	}
	used := map[string]bool{}
	for _, s := range snippets {
		if strings.TrimSpace(s.text) == "" {
			t.Errorf("%s:%d: empty ```go block", guidePath, s.line)
			continue
		}
		found := containsLines(src, s.text)
		for name, body := range bodies {
			if containsLines(body, s.text) {
				found, used[name] = true, true
			}
		}
		if !found {
			t.Errorf("%s:%d: this ```go block is not in %s (put it there verbatim, in a guide... function indented one tab, or as top-level code):\n%s",
				guidePath, s.line, guideSnippetsPath, s.text)
		}
	}
	for name := range bodies {
		if !used[name] {
			t.Errorf("%s: %s holds no snippet of %s", guideSnippetsPath, name, guidePath)
		}
	}
}

// guidePendingFields are fields the guide may name before they exist
// (none now).
var guidePendingFields = map[string]bool{}

// TestGuideNamesExistingOptions checks that every Options.Name (and
// ReadOptions.Name, BackupOptions.Name...) the guide names is a field or
// method of that shale type, so that a renamed or removed option cannot
// linger in the guide. Names qualified by another package (pebble.Options.Cache)
// are left alone.
func TestGuideNamesExistingOptions(t *testing.T) {
	structs := map[string]reflect.Type{
		"Options":                   reflect.TypeFor[shale.Options](),
		"ReadOptions":               reflect.TypeFor[shale.ReadOptions](),
		"WriteOptions":              reflect.TypeFor[shale.WriteOptions](),
		"BackupOptions":             reflect.TypeFor[shale.BackupOptions](),
		"TxnOptions":                reflect.TypeFor[shale.TxnOptions](),
		"TransactionDBOptions":      reflect.TypeFor[shale.TransactionDBOptions](),
		"IngestExternalFileOptions": reflect.TypeFor[shale.IngestExternalFileOptions](),
		"CompactRangeOptions":       reflect.TypeFor[shale.CompactRangeOptions](),
		"WaitForCompactOptions":     reflect.TypeFor[shale.WaitForCompactOptions](),
	}
	re := regexp.MustCompile(`\b([A-Za-z]*Options)\.([A-Z][A-Za-z0-9]*)\b`)
	md := readGuideText(t, guidePath)
	seen := 0
	for i, line := range strings.Split(md, "\n") {
		for _, idx := range re.FindAllStringSubmatchIndex(line, -1) {
			typeName, name := line[idx[2]:idx[3]], line[idx[4]:idx[5]]
			typ, ok := structs[typeName]
			// pebble.Options.Cache and the like name another package's options.
			if !ok || guidePendingFields[typeName+"."+name] || (idx[0] > 0 && line[idx[0]-1] == '.') {
				continue
			}
			seen++
			_, isField := typ.FieldByName(name)
			_, isMethod := reflect.PointerTo(typ).MethodByName(name)
			if !isField && !isMethod {
				t.Errorf("%s:%d: %s.%s is neither a field nor a method of shale.%s", guidePath, i+1, typeName, name, typeName)
			}
		}
	}
	if seen < 50 {
		t.Fatalf("only %d option fields named in %s: the pattern is broken", seen, guidePath)
	}
}

// TestGuideSnippetsRun runs the guide's snippets that take a directory or a
// DB, on temporary directories, and validates the Options the others build,
// so that a snippet that compiles but no longer works (an option refused, a
// renamed SetOptions key) fails too. What they print is discarded.
func TestGuideSnippetsRun(t *testing.T) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	stdout, logOut := os.Stdout, log.Writer()
	os.Stdout = devNull
	log.SetOutput(io.Discard)
	defer func() {
		os.Stdout = stdout
		log.SetOutput(logOut)
		devNull.Close()
	}()

	for name, f := range map[string]func() *shale.Options{
		"guideMemory":                   guideMemory,
		"guideCompression":              guideCompression,
		"guideBlobFiles":                guideBlobFiles,
		"guideDeleteAware":              guideDeleteAware,
		"guideDeletePersistenceOptions": guideDeletePersistenceOptions,
		"guideCompactionFilter":         guideCompactionFilter,
		"guideEventListener":            guideEventListener,
		"guideRateLimiter":              guideRateLimiter,
	} {
		if err := f().EnsureDefaults().Validate(); err != nil {
			t.Errorf("%s: the options are refused: %v", name, err)
		}
	}

	// Snippets that open a database of their own, each in a new directory.
	for name, f := range map[string]func(string) error{
		"guideSecondaryDelete": guideSecondaryDelete,
		"guideMerge":           guideMerge,
		"guidePrefixSeek":      guidePrefixSeek,
		"guideTransaction":     guideTransaction,
		"guideStatistics":      guideStatistics,
	} {
		if err := f(testdir.New(t)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	// guideOpenOptions creates the database that guideRecoveryMode reopens
	// and guideCheck checks once it is closed.
	dir := testdir.New(t)
	db, err := guideOpenOptions(dir)
	if err != nil {
		t.Fatalf("guideOpenOptions: %v", err)
	}
	key, value := []byte("k"), []byte("v")
	for name, f := range map[string]func() error{
		"guideWrites":     func() error { return guideWrites(db) },
		"guideDurability": func() error { return guideDurability(db, key, value) },
		"guideAsyncIO":    func() error { return guideAsyncIO(db, [][]byte{key, []byte("absent")}) },
		"guideDeadline": func() error {
			// The snippets run in map order: the key may not be written yet.
			if err := db.Put(key, value, nil); err != nil {
				return err
			}
			_, err := guideDeadline(db, key)
			return err
		},
		"guideScan": func() error {
			snap := db.NewSnapshot()
			defer snap.Release()
			return guideScan(db, snap)
		},
		"guideSnapshot":              func() error { return guideSnapshot(db) },
		"guideOptimisticTransaction": func() error { return guideOptimisticTransaction(db) },
		"guideSetOptions":            func() error { return guideSetOptions(db) },
		"guideResume":                func() error { return guideResume(db, key, value) },
	} {
		if err := f(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	guideMemoryMetrics(db)
	guideIOUring(db)
	guideBlobMetrics(db)
	guideDeletePersistence(db)
	guideMetrics(db)
	guidePerfContext(db, key)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := guideRecoveryMode(dir); err != nil {
		t.Errorf("guideRecoveryMode: %v", err)
	}
	if err := guideCheck(dir); err != nil {
		t.Errorf("guideCheck: %v", err)
	}
}
