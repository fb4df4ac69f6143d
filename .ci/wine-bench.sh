#!/usr/bin/env bash
# wine-bench.sh runs `shale bench` as a Windows binary under Wine: the
# default suite with a small --num, and flushes and compactions made
# frequent (a 64 KiB write buffer and small tables) so that renames and
# deletes of open files happen, on a temporary directory. It checks that the
# run exits 0, that every benchmark of the default suite printed its result
# line with a throughput above 0 (on Windows time.Now moves by clock ticks,
# and short benchmarks once printed "0 ops/sec"), and that `shale check`
# finds the database it left intact.
#
# It uses the Wine set-up of .ci/wine.sh (run that first): the launcher, the
# prefix and its bcryptprimitives.dll stub. Without a Wine launcher (wine.sh
# could not install it and said so) it skips loudly.
#
# Environment: SHALE_WINEPREFIX as for wine.sh; SHALE_WINE_BENCH_NUM (default
# 10000) is --num; SHALE_WINE_BENCH_TIMEOUT (default 120) bounds the bench,
# in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(uname -s)" != Linux ] || [ "$(uname -m)" != x86_64 ]; then
	echo "wine-bench.sh: Wine runs windows/amd64 binaries on linux/amd64 only; skipping on $(uname -s)/$(uname -m)"
	exit 0
fi

WINE=
for c in wine64 wine /usr/lib/wine/wine64; do
	if command -v "$c" >/dev/null 2>&1; then
		WINE=$(command -v "$c")
		break
	fi
done
if [ -z "$WINE" ]; then
	echo "wine-bench.sh: WARNING: no Wine launcher; shale bench did NOT run under Wine" >&2
	exit 0
fi

export WINEDEBUG=-all
export WINEDLLOVERRIDES="mscoree,mshtml="
export WINEARCH=win64
export WINEPREFIX=${SHALE_WINEPREFIX:-$HOME/.cache/shale-ci/wine-prefix}
if [ ! -f "$WINEPREFIX/system.reg" ] || [ ! -f "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" ]; then
	echo "wine-bench.sh: the Wine prefix $WINEPREFIX is not set up; run .ci/wine.sh first" >&2
	exit 1
fi

num=${SHALE_WINE_BENCH_NUM:-10000}
timeout_s=${SHALE_WINE_BENCH_TIMEOUT:-120}
work=$(mktemp -d)
WINESERVER=$(dirname "$WINE")/wineserver
[ -x "$WINESERVER" ] || WINESERVER=$(command -v wineserver || true)
cleanup() {
	if [ -n "$WINESERVER" ]; then
		"$WINESERVER" -k 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
# One server for both programs, up before them (see wine.sh).
if [ -n "$WINESERVER" ]; then
	"$WINESERVER" -k 2>/dev/null || true
	"$WINESERVER" -p
	"$WINE" wineboot </dev/null >/dev/null 2>&1 || true
fi

echo "+ GOOS=windows GOARCH=amd64 go build -o shale.exe ./cmd/shale"
GOOS=windows GOARCH=amd64 CGO_ENABLED=0 go build -o "$work/shale.exe" ./cmd/shale

# Wine maps the Linux root to drive Z:.
winpath() { printf 'Z:%s' "${1//\//\\}"; }
db=$work/db

# The default suite, as the binary's own help names it.
suite=$("$WINE" "$work/shale.exe" bench --help </dev/null 2>/dev/null | sed -n 's/.*runs a short suite (\([a-z0-9,]*\)).*/\1/p' | head -n1)
if [ -z "$suite" ]; then
	echo "wine-bench.sh: could not read the default suite from shale.exe bench --help" >&2
	exit 1
fi

start=$(date +%s)
echo "+ wine shale.exe bench --num $num --write_buffer_size 65536 --target_file_size_base 65536 --max_bytes_for_level_base 262144 --db $(winpath "$db")"
rc=0
timeout "$timeout_s" "$WINE" "$work/shale.exe" bench --num "$num" \
	--write_buffer_size 65536 --target_file_size_base 65536 --max_bytes_for_level_base 262144 \
	--db "$(winpath "$db")" </dev/null >"$work/out" 2>"$work/err" || rc=$?
elapsed=$(($(date +%s) - start))
cat "$work/out"
if [ "$rc" -ne 0 ]; then
	cat "$work/err" >&2
	echo "wine-bench.sh: shale.exe bench exited with $rc after $elapsed s (124: timed out after $timeout_s s)" >&2
	exit 1
fi

missing=()
for name in ${suite//,/ }; do
	# db_bench's line: "readrandom   :       6.554 micros/op 152578 ops/sec ...".
	if ! grep -Eq "^$name +: +[0-9]+\.[0-9]{3} micros/op [1-9][0-9]* ops/sec" "$work/out"; then
		missing+=("$name")
	fi
done
if [ ${#missing[@]} -gt 0 ]; then
	cat "$work/err" >&2
	echo "wine-bench.sh: no result line with a throughput above 0 for: ${missing[*]} (suite $suite)" >&2
	exit 1
fi

echo "+ wine shale.exe check --db $(winpath "$db")"
if ! "$WINE" "$work/shale.exe" check --db "$(winpath "$db")" </dev/null >"$work/check" 2>&1; then
	cat "$work/check" >&2
	echo "wine-bench.sh: shale.exe check found the database the bench left damaged" >&2
	exit 1
fi
tail -n1 "$work/check"
echo "wine-bench.sh: shale bench ($suite, --num $num) passed under $("$WINE" --version 2>/dev/null || echo wine) in $elapsed s"
