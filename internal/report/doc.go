// Package report renders benchmark reports: one self-contained HTML page
// (inline CSS, inline SVG, one small inline script) with line charts, bar
// charts and tables, for `shale bench --report` and `bench/compare
// --report`.
//
// It owns the drawing: scales, "nice" axis ticks (1, 2 or 5 times a power
// of ten), logarithmic axes, number labels (SI suffixes), legends and the
// escaping of every name that reaches the page. It never reads or writes
// files and knows nothing of databases or benchmarks: callers build a Page
// of Sections and write its HTML where they like.
//
// The page loads nothing: no network, no external style sheet, script or
// font. Each chart is a <figure class="plot"> whose data marks (a circle per
// line-chart point, a rect per bar) carry the class "datum". The inline
// script counts them once the page has loaded and records the result on
// <body>: data-plots="id=N;id=N;..." and data-plots-empty (the number of
// plots with no mark), and data-report-errors for script errors; a headless
// browser test reads them back (.ci/report-browser-test.sh).
package report
