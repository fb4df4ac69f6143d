// Package prometheus exports a shale DB's metrics to Prometheus: a
// prometheus.Collector (NewCollector) of everything DB.Metrics reports and
// of the tickers and latency histograms of the DB's Options.Statistics,
// named as Prometheus names things (a shale_ prefix, snake_case, the unit
// in the name, _total on counters; per-level metrics carry a level label).
//
// It is a module of its own, so that the shale library needs no Prometheus
// client; import it under another name beside client_golang's package:
//
//	import shaleprom "github.com/shaledb/shale/contrib/prometheus"
//
//	prometheus.MustRegister(shaleprom.NewCollector(db))
//
// docs/decisions.md ("Prometheus collector") lists every metric.
package prometheus
