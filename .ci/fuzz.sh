#!/usr/bin/env bash
# Runs every go test -fuzz target of the module, one after another, for
# ${SHALE_FUZZTIME:-30s} each, and stops at the first failure. Prints the
# executions of each target and, on a failure, where go test wrote the
# failing input (testdata/fuzz/<Name>/<hash> in the target's package: commit
# it as a regression seed once the bug is fixed). Nothing is written to
# testdata when nothing is found. See docs/fuzzing.md.
#
#   SHALE_FUZZTIME          time per target (go test -fuzztime), default 30s
#   SHALE_FUZZMINIMIZETIME  time to minimize a new input, default 1s (the
#                           default 60s can spend a whole run minimizing)
#   SHALE_FUZZ_MATCH        only targets whose name matches this regexp
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${SHALE_FUZZTIME:-30s}
minimize=${SHALE_FUZZMINIMIZETIME:-1s}
match=${SHALE_FUZZ_MATCH:-.}

# Targets as "package-dir target", found in the test files so that a new
# target is fuzzed without editing this script.
mapfile -t targets < <(
	grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' . |
		sed -E 's#^(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]+)\(.*#\1 \2#' |
		grep -v '^./bench/' | sort
)
if [ ${#targets[@]} -eq 0 ]; then
	echo "no fuzz targets found" >&2
	exit 1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$SECONDS
summary=()
for t in "${targets[@]}"; do
	dir=${t% *}
	name=${t#* }
	if ! [[ "$name" =~ $match ]]; then
		continue
	fi
	printf '=== %s %s (%s)\n' "$dir" "$name" "$fuzztime"
	# Go 1.26's fuzz coordinator can end a run that found nothing with
	# "context deadline exceeded" when -fuzztime expires while a worker is
	# busy (go.dev/issue/75804, fixed in Go 1.27), most often on a loaded
	# machine. Such a run writes no failing input: it is retried, twice at
	# most. A run that writes a failing input fails at once.
	for attempt in 1 2 3; do
		set +e
		go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$dir" >"$log" 2>&1
		rc=$?
		set -e
		if [ $rc -eq 0 ] || grep -q 'Failing input written to' "$log" ||
			! grep -q '^    context deadline exceeded$' "$log"; then
			break
		fi
		echo "note: $name ended with Go's fuzztime deadline race (go.dev/issue/75804) and no failing input; retrying"
	done
	execs=$(grep -Eo 'execs: [0-9]+' "$log" | tail -1 | awk '{print $2}' || true)
	summary+=("$(printf '%-40s %-22s %12s execs' "$dir" "$name" "${execs:-?}")")
	if [ $rc -ne 0 ]; then
		cat "$log"
		crasher=$(grep -Eo 'Failing input written to [^ ]+' "$log" | awk '{print $5}' || true)
		if [ -n "$crasher" ]; then
			echo "FAIL: $name: failing input written to $dir/$crasher"
			echo "reproduce: go test -run '^${name}/$(basename "$crasher")\$' $dir"
		else
			echo "FAIL: $name (no failing input written; see the output above)"
		fi
		exit 1
	fi
	echo "ok: ${execs:-?} execs"
done
echo
echo "=== fuzzing summary ($((SECONDS - start))s)"
printf '%s\n' "${summary[@]}"
