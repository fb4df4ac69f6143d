#!/usr/bin/env bash
# report-browser-test.sh: loads a `shale bench --report` page in headless
# Chromium (Debian's chromium, installed when missing) and checks that it
# logs nothing to the console (the page's script logs nothing, so any
# console line is an error or an uncaught exception) and that every plot
# has data: the page's script writes, once loaded, the marks each plot
# drew to <body data-plots="id=N;..."> and the number of plots without any
# to data-plots-empty, which --dump-dom prints back. A screenshot of the
# page goes to $SHALE_REPORT_SCREENSHOT (default: a file in the temporary
# directory, outside the repository); its path is printed.
#
# Run from anywhere inside a checkout: .ci/report-browser-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/lib.sh

find_chromium() {
	local c
	for c in chromium chromium-browser; do
		if command -v "$c" >/dev/null 2>&1; then
			command -v "$c"
			return 0
		fi
	done
	return 1
}

if ! find_chromium >/dev/null; then
	echo "installing chromium"
	apt_install chromium
fi
browser=$(find_chromium)

work=$(mktemp -d "${TMPDIR:-/tmp}/shale-report-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
shot=${SHALE_REPORT_SCREENSHOT:-${TMPDIR:-/tmp}/shale-report-screenshot.png}

go build -o "$work/shale" ./cmd/shale
# A small run that still flushes and compacts (1 MiB memtables and files):
# every plot of the report then has data.
"$work/shale" bench --num 50000 --write_buffer_size 1048576 \
	--target_file_size_base 1048576 --max_bytes_for_level_base 4194304 \
	--benchmarks fillrandom,readrandom,overwrite,seekrandom,readseq \
	--db "$work/db" --report "$work/report.html" >"$work/bench.out"
if grep -q $'\r' "$work/bench.out"; then
	echo "bench drew a progress line on a stdout that is not a terminal" >&2
	exit 1
fi

# flags: no GPU, no sandbox (CI runs as root), nothing fetched in the
# background, a fresh profile.
chrome() {
	local profile
	profile=$(mktemp -d "$work/profile.XXXXXX")
	timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic \
		--no-first-run --disable-background-networking --disable-component-update \
		--disable-sync --user-data-dir="$profile" --enable-logging=stderr --v=0 "$@"
}

chrome --dump-dom "file://$work/report.html" >"$work/dom.html" 2>"$work/chrome.log"
if grep -E 'CONSOLE' "$work/chrome.log" >&2; then
	echo "the report logged to the browser's console (above)" >&2
	exit 1
fi
body=$(grep -o '<body[^>]*>' "$work/dom.html" || true)
plots=$(sed -n 's/.*data-plots="\([^"]*\)".*/\1/p' <<<"$body")
empty=$(sed -n 's/.*data-plots-empty="\([^"]*\)".*/\1/p' <<<"$body")
errors=$(sed -n 's/.*data-report-errors="\([^"]*\)".*/\1/p' <<<"$body")
echo "plots and their marks: $plots"
if [ -z "$plots" ] || [ "$empty" != 0 ]; then
	echo "the page's script did not run, or a plot has no data (empty: '${empty}')" >&2
	exit 1
fi
if [ -n "$errors" ]; then
	echo "script errors on the page: $errors" >&2
	exit 1
fi
# Every plot the HTML declares was counted, with the marks it declares.
declared=$(grep -o 'data-plot="[^"]*" data-points="[0-9]*"' "$work/report.html" |
	sed 's/data-plot="\([^"]*\)" data-points="\([0-9]*\)"/\1=\2/' | paste -sd';')
if [ "$declared" != "$plots" ]; then
	echo "the browser counted '$plots', the page declares '$declared'" >&2
	exit 1
fi
for want in throughput-0-fillrandom latency bytes-written compactions shape-files shape-bytes; do
	if ! grep -q "\(^\|;\)$want" <<<"$plots"; then
		echo "plot $want is missing" >&2
		exit 1
	fi
done

chrome --screenshot="$shot" --window-size=1600,3000 --hide-scrollbars \
	"file://$work/report.html" >/dev/null 2>&1
test -s "$shot"
echo "report ok in $("$browser" --version 2>/dev/null | head -1); screenshot: $shot"
