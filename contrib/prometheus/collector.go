package prometheus

import (
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shaledb/shale"
)

// Collector is a prometheus.Collector of one DB's metrics: DB.Metrics and,
// when the DB has one, its Options.Statistics. Collect reads them afresh at
// each scrape, takes no lock of its own, and is safe concurrently with any
// use of the DB, with Close, and with other Collects. On a closed DB it
// reports only shale_up 0.
type Collector struct {
	db    *shale.DB
	stats *shale.Statistics

	up            *prometheus.Desc
	backgroundErr *prometheus.Desc
	asyncReader   *prometheus.Desc
	levelTTL      *prometheus.Desc
	scalars       []scalarMetric
	levels        []levelMetric
	tickers       []tickerMetric
	histograms    []histogramMetric
}

// Option configures a Collector (NewCollector).
type Option func(*config)

type config struct {
	stats       *shale.Statistics
	statsSet    bool
	constLabels prometheus.Labels
}

// WithStatistics reports the tickers and histograms of s instead of those of
// the DB's Options.Statistics (the default); nil reports none.
func WithStatistics(s *shale.Statistics) Option {
	return func(c *config) { c.stats, c.statsSet = s, true }
}

// WithConstLabels adds labels to every metric, e.g. {"db": "users"} to tell
// the DBs of one process apart in one registry.
func WithConstLabels(l prometheus.Labels) Option {
	return func(c *config) { c.constLabels = l }
}

// NewCollector returns a Collector of db; register it with a
// prometheus.Registerer. Several DBs in one registry need WithConstLabels.
func NewCollector(db *shale.DB, opts ...Option) *Collector {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if !cfg.statsSet {
		// Statistics cannot change while the DB is open (SetOptions does
		// not take it), so it is read once.
		cfg.stats = db.GetOptions().Statistics
	}
	c := &Collector{db: db, stats: cfg.stats}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, cfg.constLabels)
	}
	c.up = desc("shale_up", "1 while the DB is open; a closed DB reports this metric alone, at 0.")
	c.backgroundErr = desc("shale_background_error", "1 when a background error (Metrics.BackgroundError) has made the DB read-only, else 0.")
	c.asyncReader = desc("shale_async_reader_info", "The batched-read mechanism of the DB (Metrics.IO.AsyncReader), as the reader label; the value is 1.", "reader")
	c.levelTTL = desc("shale_level_delete_persistence_deadline_seconds",
		"Age of its oldest tombstone at which a table of the level is past its delete persistence deadline (Metrics.DeletePersistence.LevelTTLs); absent with the threshold off.", "level")
	for _, s := range scalarSpecs {
		c.scalars = append(c.scalars, scalarMetric{spec: s, desc: desc(s.name, s.help+" ("+s.field+")")})
	}
	for _, s := range levelSpecs {
		c.levels = append(c.levels, levelMetric{spec: s, desc: desc(s.name, s.help+" ("+s.field+")", "level")})
	}
	if c.stats != nil {
		for _, t := range allTickers() {
			name, help, typ := tickerName(t)
			c.tickers = append(c.tickers, tickerMetric{ticker: t, typ: typ, desc: desc(name, help+" (ticker "+t.String()+")")})
		}
		for _, h := range allHistograms() {
			name, help := histogramName(h)
			c.histograms = append(c.histograms, histogramMetric{hist: h, desc: desc(name, help+" (histogram "+h.String()+", in seconds)")})
		}
	}
	return c
}

// Describe sends the descriptors of every metric Collect may send.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.backgroundErr
	ch <- c.asyncReader
	ch <- c.levelTTL
	for _, s := range c.scalars {
		ch <- s.desc
	}
	for _, l := range c.levels {
		ch <- l.desc
	}
	for _, t := range c.tickers {
		ch <- t.desc
	}
	for _, h := range c.histograms {
		ch <- h.desc
	}
}

// Collect sends the current metrics. It calls DB.Metrics once, and reads each
// ticker and histogram of the Statistics once.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	m := c.db.Metrics()
	// An open DB always has its levels; Metrics of a closed DB (or one
	// that Close reached while Metrics ran) is empty. Checked on the
	// result, not before the call, so a Close in between reports closed
	// rather than zeros that would look like counter resets.
	if len(m.Levels) == 0 {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	c.collectMetrics(ch, m)
	c.collectStatistics(ch)
}

// collectMetrics sends what m holds.
func (c *Collector) collectMetrics(ch chan<- prometheus.Metric, m *shale.Metrics) {
	bgErr := 0.0
	if m.BackgroundError != nil {
		bgErr = 1
	}
	ch <- prometheus.MustNewConstMetric(c.backgroundErr, prometheus.GaugeValue, bgErr)
	if m.IO.AsyncReader != "" {
		ch <- prometheus.MustNewConstMetric(c.asyncReader, prometheus.GaugeValue, 1, m.IO.AsyncReader)
	}
	for _, s := range c.scalars {
		ch <- prometheus.MustNewConstMetric(s.desc, s.spec.typ, s.spec.value(m))
	}
	for i := range m.Levels {
		level := strconv.Itoa(i)
		for _, l := range c.levels {
			ch <- prometheus.MustNewConstMetric(l.desc, prometheus.GaugeValue, l.spec.value(&m.Levels[i]), level)
		}
	}
	for i, ttl := range m.DeletePersistence.LevelTTLs {
		ch <- prometheus.MustNewConstMetric(c.levelTTL, prometheus.GaugeValue, ttl.Seconds(), strconv.Itoa(i))
	}
}

// collectStatistics sends the tickers and histograms of c.stats.
func (c *Collector) collectStatistics(ch chan<- prometheus.Metric) {
	for _, t := range c.tickers {
		ch <- prometheus.MustNewConstMetric(t.desc, t.typ, float64(c.stats.TickerCount(t.ticker)))
	}
	for _, h := range c.histograms {
		d := c.stats.Histogram(h.hist)
		const us = 1e-6 // HistogramData is in microseconds
		quantiles := map[float64]float64{0.5: d.P50 * us, 0.95: d.P95 * us, 0.99: d.P99 * us, 1: d.P100 * us}
		ch <- prometheus.MustNewConstSummary(h.desc, d.Count, d.Sum*us, quantiles)
	}
}

type scalarMetric struct {
	spec scalarSpec
	desc *prometheus.Desc
}

type levelMetric struct {
	spec levelSpec
	desc *prometheus.Desc
}

type tickerMetric struct {
	ticker shale.Ticker
	typ    prometheus.ValueType
	desc   *prometheus.Desc
}

type histogramMetric struct {
	hist shale.HistogramType
	desc *prometheus.Desc
}

// allTickers returns every ticker this build of shale has: they are
// numbered from 0, and String names one past the last "Ticker(N)".
func allTickers() []shale.Ticker {
	var ts []shale.Ticker
	for t := shale.Ticker(0); !strings.HasPrefix(t.String(), "Ticker("); t++ {
		ts = append(ts, t)
	}
	return ts
}

// allHistograms returns every histogram this build of shale has.
func allHistograms() []shale.HistogramType {
	var hs []shale.HistogramType
	for h := shale.HistogramType(0); !strings.HasPrefix(h.String(), "HistogramType("); h++ {
		hs = append(hs, h)
	}
	return hs
}

// seconds converts a duration to the float seconds Prometheus wants.
func seconds(d time.Duration) float64 { return d.Seconds() }
