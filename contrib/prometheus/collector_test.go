package prometheus

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/shaledb/shale"
	"github.com/shaledb/shale/vfs"
)

// openTestDB opens a DB on an in-memory file system with a Statistics;
// modify, if not nil, changes the options first.
func openTestDB(t *testing.T, modify func(*shale.Options)) (*shale.DB, *shale.Statistics) {
	t.Helper()
	stats := shale.NewStatistics()
	o := &shale.Options{FS: vfs.NewMem(), CreateIfMissing: true, Statistics: stats}
	if modify != nil {
		modify(o)
	}
	db, err := shale.Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db, stats
}

// scrape serves reg on a loopback HTTP server, GETs it once, and parses the
// text format.
func scrape(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s: %s", resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("scrape: Content-Type %q, want the text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parsing the scrape: %v\n%s", err, body)
	}
	return families
}

// register returns a pedantic registry (it checks that Collect sends only
// described, consistent metrics) holding c.
func register(t *testing.T, c prometheus.Collector) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	return reg
}

// fieldValue returns the field of v at path ("Flush.Count") as Prometheus
// reports it: numbers as they are, durations in seconds.
func fieldValue(t *testing.T, v reflect.Value, path string) float64 {
	t.Helper()
	for _, name := range strings.Split(path, ".") {
		v = v.FieldByName(name)
		if !v.IsValid() {
			t.Fatalf("no field %s", path)
		}
	}
	if v.Type() == reflect.TypeFor[time.Duration]() {
		return time.Duration(v.Int()).Seconds()
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int64:
		return float64(v.Int())
	case reflect.Uint64:
		return float64(v.Uint())
	case reflect.Float64:
		return v.Float()
	}
	t.Fatalf("field %s is a %s", path, v.Type())
	return 0
}

// oneValue returns the value of the only metric of family name (with the
// given level label, if not "").
func oneValue(t *testing.T, families map[string]*dto.MetricFamily, name, level string) float64 {
	t.Helper()
	mf := families[name]
	if mf == nil {
		t.Fatalf("no metric %s in the scrape", name)
	}
	for _, m := range mf.GetMetric() {
		var got string
		for _, l := range m.GetLabel() {
			if l.GetName() == "level" {
				got = l.GetValue()
			}
		}
		if got != level {
			continue
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue()
		}
		t.Fatalf("%s is a %s", name, mf.GetType())
	}
	t.Fatalf("%s has no metric with level %q", name, level)
	return 0
}

var metricNameRE = regexp.MustCompile(`^shale_[a-z0-9]+(_[a-z0-9]+)*$`)

// TestCollectorScrapeMatchesMetrics writes, flushes and reads known keys,
// scrapes the collector over HTTP, and checks every metric's name and type
// and that its value is the Metrics field (or the Statistics ticker or
// histogram) it reports.
func TestCollectorScrapeMatchesMetrics(t *testing.T) {
	// Without compactions the tombstone stays in its own table.
	db, stats := openTestDB(t, func(o *shale.Options) { o.DisableAutoCompactions = true })
	const n = 200
	value := strings.Repeat("v", 100)
	for i := range n {
		if err := db.Put(fmt.Appendf(nil, "key%05d", i), []byte(value), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	// Flushed above the table holding its key, the tombstone stays.
	if err := db.Delete([]byte("key00007"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := db.Get(fmt.Appendf(nil, "key%05d", i), nil); err != nil && i != 7 {
			t.Fatal(err)
		}
	}
	it := db.NewIterator(nil)
	nexts := 0
	for it.Seek([]byte("key00100")); it.Valid(); it.Next() {
		nexts++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}

	c := NewCollector(db)
	families := scrape(t, register(t, c))
	// The DB is idle: what Metrics says now is what the scrape saw, but for
	// the tombstone's age, which grows.
	m := db.Metrics()
	mv := reflect.ValueOf(m).Elem()

	for name, mf := range families {
		if !metricNameRE.MatchString(name) {
			t.Errorf("metric %s: not a shale_ snake_case name", name)
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			if !strings.HasSuffix(name, "_total") {
				t.Errorf("counter %s does not end in _total", name)
			}
		case dto.MetricType_GAUGE:
			if strings.HasSuffix(name, "_total") {
				t.Errorf("gauge %s ends in _total", name)
			}
		case dto.MetricType_SUMMARY:
			if !strings.HasSuffix(name, "_seconds") {
				t.Errorf("summary %s is not in seconds", name)
			}
		default:
			t.Errorf("metric %s is a %s", name, mf.GetType())
		}
		if mf.GetHelp() == "" {
			t.Errorf("metric %s has no help", name)
		}
	}
	if got := oneValue(t, families, "shale_up", ""); got != 1 {
		t.Errorf("shale_up = %v, want 1", got)
	}

	for _, s := range scalarSpecs {
		want := fieldValue(t, mv, s.field)
		got := oneValue(t, families, s.name, "")
		if s.name == "shale_delete_persistence_oldest_tombstone_age_seconds" {
			if got <= 0 || got > want {
				t.Errorf("%s = %v, want in (0, %v]", s.name, got, want)
			}
			continue
		}
		if got != want {
			t.Errorf("%s = %v, Metrics().%s = %v", s.name, got, s.field, want)
		}
		wantType := dto.MetricType_GAUGE
		if s.typ == prometheus.CounterValue {
			wantType = dto.MetricType_COUNTER
		}
		if typ := families[s.name].GetType(); typ != wantType {
			t.Errorf("%s is a %s, want %s", s.name, typ, wantType)
		}
	}
	var files, entries float64
	for level := range m.Levels {
		lv := reflect.ValueOf(m.Levels[level])
		for _, s := range levelSpecs {
			want := fieldValue(t, lv, s.field)
			if got := oneValue(t, families, s.name, fmt.Sprint(level)); got != want {
				t.Errorf("%s{level=%d} = %v, Metrics().Levels[%d].%s = %v", s.name, level, got, level, s.field, want)
			}
		}
		files += oneValue(t, families, "shale_level_files", fmt.Sprint(level))
		entries += oneValue(t, families, "shale_level_entries", fmt.Sprint(level))
	}
	if n := len(families["shale_level_files"].GetMetric()); n != len(m.Levels) {
		t.Errorf("shale_level_files has %d levels, Metrics %d", n, len(m.Levels))
	}

	// What the writes and reads above must show, whatever Metrics says.
	if got := oneValue(t, families, "shale_user_written_bytes_total", ""); got < n*100 {
		t.Errorf("shale_user_written_bytes_total = %v after %d puts of 100-byte values", got, n)
	}
	if got := oneValue(t, families, "shale_flushes_total", ""); got < 1 {
		t.Errorf("shale_flushes_total = %v after a flush", got)
	}
	if files < 1 || entries != n+1 {
		t.Errorf("levels hold %v files and %v entries, want at least 1 and %d", files, entries, n+1)
	}
	if got := oneValue(t, families, "shale_table_tombstones", ""); got != 1 {
		t.Errorf("shale_table_tombstones = %v, want 1", got)
	}
	if got := oneValue(t, families, "shale_background_error", ""); got != 0 {
		t.Errorf("shale_background_error = %v, want 0", got)
	}
	if mf := families["shale_async_reader_info"]; len(mf.GetMetric()) != 1 || mf.GetMetric()[0].GetLabel()[0].GetValue() != m.IO.AsyncReader {
		t.Errorf("shale_async_reader_info = %v, want reader %q", mf, m.IO.AsyncReader)
	}

	// Statistics: every ticker and histogram, with its value.
	for _, tk := range allTickers() {
		name, _, _ := tickerName(tk)
		if got, want := oneValue(t, families, name, ""), float64(stats.TickerCount(tk)); got != want {
			t.Errorf("%s = %v, TickerCount(%s) = %v", name, got, tk, want)
		}
	}
	if got := oneValue(t, families, "shale_statistics_block_reads_total", ""); got < 1 {
		t.Errorf("shale_statistics_block_reads_total = %v after reading a flushed table", got)
	}
	for _, h := range allHistograms() {
		name, _ := histogramName(h)
		mf := families[name]
		if mf.GetType() != dto.MetricType_SUMMARY || len(mf.GetMetric()) != 1 {
			t.Fatalf("%s: %v, want one summary", name, mf)
		}
		s := mf.GetMetric()[0].GetSummary()
		d := stats.Histogram(h)
		if s.GetSampleCount() != d.Count || !approxEqual(s.GetSampleSum(), d.Sum/1e6) {
			t.Errorf("%s: count %d sum %v, Histogram(%s): count %d sum %v µs", name, s.GetSampleCount(), s.GetSampleSum(), h, d.Count, d.Sum)
		}
		want := map[float64]float64{0.5: d.P50 / 1e6, 0.95: d.P95 / 1e6, 0.99: d.P99 / 1e6, 1: d.P100 / 1e6}
		if len(s.GetQuantile()) != len(want) {
			t.Errorf("%s: quantiles %v, want %v", name, s.GetQuantile(), want)
		}
		for _, q := range s.GetQuantile() {
			if w, ok := want[q.GetQuantile()]; !ok || !approxEqual(q.GetValue(), w) {
				t.Errorf("%s: quantile %v = %v, want %v", name, q.GetQuantile(), q.GetValue(), w)
			}
		}
	}
	get := families["shale_statistics_get_duration_seconds"].GetMetric()[0].GetSummary()
	if get.GetSampleCount() != n || get.GetSampleSum() <= 0 || get.GetSampleSum() > 60 {
		t.Errorf("shale_statistics_get_duration_seconds: count %d sum %vs after %d Gets", get.GetSampleCount(), get.GetSampleSum(), n)
	}
	next := families["shale_statistics_next_duration_seconds"].GetMetric()[0].GetSummary()
	if next.GetSampleCount() != uint64(nexts) {
		t.Errorf("shale_statistics_next_duration_seconds: count %d after %d Nexts", next.GetSampleCount(), nexts)
	}
}

func approxEqual(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestCollectorPassesLint runs promlint (naming, units, counters, help) over
// everything the collector reports, Statistics included.
func TestCollectorPassesLint(t *testing.T) {
	db, _ := openTestDB(t, nil)
	if err := db.Put([]byte("k"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get([]byte("k"), nil); err != nil {
		t.Fatal(err)
	}
	c := NewCollector(db, WithConstLabels(prometheus.Labels{"db": "test"}))
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	if n := testutil.CollectAndCount(c); n < len(scalarSpecs)+len(allTickers())+len(allHistograms()) {
		t.Errorf("collected %d metrics, fewer than the specs", n)
	}
}

// TestCollectorOnClosedDB scrapes a closed DB: no panic, shale_up 0 and
// nothing else (no zeros that would read as counter resets).
func TestCollectorOnClosedDB(t *testing.T) {
	db, _ := openTestDB(t, nil)
	if err := db.Put([]byte("k"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	c := NewCollector(db)
	reg := register(t, c)
	if got := oneValue(t, scrape(t, reg), "shale_up", ""); got != 1 {
		t.Fatalf("shale_up = %v while open", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	families := scrape(t, reg)
	if got := oneValue(t, families, "shale_up", ""); got != 0 {
		t.Errorf("shale_up = %v after Close, want 0", got)
	}
	if len(families) != 1 {
		names := make([]string, 0, len(families))
		for name := range families {
			names = append(names, name)
		}
		t.Errorf("a closed DB reported %v, want shale_up alone", names)
	}
}

// TestCollectorConcurrentWithWritesAndClose collects in a loop while another
// goroutine writes and then closes the DB (run it under -race): every
// collection is whole (shale_up 1 with the DB's metrics) or the closed one
// (shale_up 0 alone).
func TestCollectorConcurrentWithWritesAndClose(t *testing.T) {
	for round := range 5 {
		db, _ := openTestDB(t, nil)
		c := NewCollector(db)
		full := testutil.CollectAndCount(c)
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for range 2 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					ch := make(chan prometheus.Metric, 1024)
					c.Collect(ch)
					close(ch)
					var n int
					up := -1.0
					for m := range ch {
						n++
						if strings.Contains(m.Desc().String(), `"shale_up"`) {
							var pb dto.Metric
							if err := m.Write(&pb); err != nil {
								t.Error(err)
							}
							up = pb.GetGauge().GetValue()
						}
					}
					if !(up == 1 && n == full) && !(up == 0 && n == 1) {
						t.Errorf("round %d: a collection had %d metrics with shale_up %v (open: %d)", round, n, up, full)
					}
				}
			})
		}
		for i := range 300 * (round + 1) {
			if err := db.Put(fmt.Appendf(nil, "k%d", i), []byte("value"), nil); err != nil {
				t.Fatal(err)
			}
			if i%100 == 0 {
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // a few collections of the closed DB
		close(stop)
		wg.Wait()
	}
}

// TestCollectorCoversEveryMetricsField checks that every number in
// shale.Metrics and shale.LevelMetrics has a metric, and that each spec
// reads the field it names: a Metrics whose fields all differ goes through
// the specs' value functions.
func TestCollectorCoversEveryMetricsField(t *testing.T) {
	// Fields reported by metrics of their own (not specs), or not numbers.
	special := map[string]string{
		"Levels":                      "levelSpecs, label level",
		"BackgroundError":             "shale_background_error",
		"IO.AsyncReader":              "shale_async_reader_info",
		"Recovery.Losses":             "a list of files and reasons: logged by Open, not a metric",
		"DeletePersistence.LevelTTLs": "shale_level_delete_persistence_deadline_seconds",
	}
	var m shale.Metrics
	want := map[string]float64{}
	var next float64
	var walk func(v reflect.Value, prefix string)
	walk = func(v reflect.Value, prefix string) {
		for i := range v.NumField() {
			f, fv := v.Type().Field(i), v.Field(i)
			path := prefix + f.Name
			if _, ok := special[path]; ok {
				continue
			}
			next++
			switch {
			case f.Type == reflect.TypeFor[time.Duration]():
				fv.SetInt(int64(next * float64(time.Second)))
			case f.Type.Kind() == reflect.Struct:
				next--
				walk(fv, path+".")
				continue
			case fv.CanInt():
				fv.SetInt(int64(next))
			case fv.CanUint():
				fv.SetUint(uint64(next))
			case fv.CanFloat():
				fv.SetFloat(next)
			default:
				t.Errorf("Metrics.%s (%s) has no metric: add one to scalarSpecs, or to special here saying why not", path, f.Type)
				continue
			}
			want[path] = next
		}
	}
	walk(reflect.ValueOf(&m).Elem(), "")
	seen := map[string]bool{}
	for _, s := range scalarSpecs {
		w, ok := want[s.field]
		if !ok {
			t.Errorf("%s names field %s, not a number of Metrics", s.name, s.field)
			continue
		}
		if seen[s.field] {
			t.Errorf("field %s has two metrics", s.field)
		}
		seen[s.field] = true
		if got := s.value(&m); got != w {
			t.Errorf("%s reads %v, want Metrics.%s = %v", s.name, got, s.field, w)
		}
	}
	for path := range want {
		if !seen[path] {
			t.Errorf("Metrics.%s has no metric in scalarSpecs", path)
		}
	}

	var l shale.LevelMetrics
	lv := reflect.ValueOf(&l).Elem()
	lwant := map[string]float64{}
	for i := range lv.NumField() {
		f := lv.Field(i)
		switch {
		case f.CanInt():
			f.SetInt(int64(i + 1))
		case f.CanUint():
			f.SetUint(uint64(i + 1))
		case f.CanFloat():
			f.SetFloat(float64(i + 1))
		default:
			t.Errorf("LevelMetrics.%s is not a number", lv.Type().Field(i).Name)
		}
		lwant[lv.Type().Field(i).Name] = float64(i + 1)
	}
	lseen := map[string]bool{}
	for _, s := range levelSpecs {
		if got, w := s.value(&l), lwant[s.field]; got != w {
			t.Errorf("%s reads %v, want LevelMetrics.%s = %v", s.name, got, s.field, w)
		}
		lseen[s.field] = true
	}
	for name := range lwant {
		if !lseen[name] {
			t.Errorf("LevelMetrics.%s has no metric in levelSpecs", name)
		}
	}
}

// TestCollectorNamesAreUnique checks that no two metrics share a name, and
// that the names made for tickers and histograms are legal.
func TestCollectorNamesAreUnique(t *testing.T) {
	names := map[string]string{}
	add := func(name, what string) {
		if !metricNameRE.MatchString(name) {
			t.Errorf("%s: name %q is not shale_ snake_case", what, name)
		}
		if prev, ok := names[name]; ok {
			t.Errorf("%s and %s are both named %s", prev, what, name)
		}
		names[name] = what
	}
	for _, s := range scalarSpecs {
		add(s.name, "Metrics."+s.field)
	}
	for _, s := range levelSpecs {
		add(s.name, "LevelMetrics."+s.field)
	}
	for _, tk := range allTickers() {
		name, _, _ := tickerName(tk)
		add(name, "ticker "+tk.String())
	}
	for _, h := range allHistograms() {
		name, _ := histogramName(h)
		add(name, "histogram "+h.String())
	}
	if got := snake("shale.blob-db.x9"); got != "shale_blob_db_x9" {
		t.Errorf("snake = %q", got)
	}
}

// BenchmarkCollectorCollect measures one scrape's collection (Metrics, every
// ticker and histogram) of a DB with a few tables.
func BenchmarkCollectorCollect(b *testing.B) {
	stats := shale.NewStatistics()
	db, err := shale.Open("db", &shale.Options{FS: vfs.NewMem(), CreateIfMissing: true, Statistics: stats})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for i := range 4000 {
		if err := db.Put(fmt.Appendf(nil, "k%06d", i), []byte("value"), nil); err != nil {
			b.Fatal(err)
		}
		if i%1000 == 999 {
			if err := db.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
	c := NewCollector(db)
	ch := make(chan prometheus.Metric, 512)
	b.ReportAllocs()
	for b.Loop() {
		c.Collect(ch)
		for len(ch) > 0 {
			<-ch
		}
	}
}
