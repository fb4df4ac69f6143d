#!/usr/bin/env bash
# wine.sh runs shale's Windows binaries under Wine: the vfs tests (with
# vfs/errorfs and vfs/latencyfs), then every
# package's tests with -short, built with GOOS=windows.
#
# On a fresh Debian/Ubuntu machine (as root, or with sudo) it installs wine64
# and the mingw-w64 cross compiler (and ca-certificates when there is no CA
# bundle, which go needs to fetch modules), creates a Wine prefix, and
# installs into it a stub bcryptprimitives.dll (.ci/wine/processprng.c) that
# Wine 8.0 lacks and Go's runtime needs at startup. Every step is skipped
# when already done, so running it twice costs only the tests. See
# docs/windows.md.
#
# Environment: SHALE_WINEPREFIX (default ~/.cache/shale-ci/wine-prefix) is the
# prefix; SHALE_WINE_TIMEOUT (default 600) bounds each go test run, in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(uname -s)" != Linux ] || [ "$(uname -m)" != x86_64 ]; then
	echo "wine.sh: Wine runs windows/amd64 binaries on linux/amd64 only; skipping on $(uname -s)/$(uname -m)"
	exit 0
fi

. "$(dirname "$0")/lib.sh"

# wine_launcher prints the command that runs a 64-bit Windows program: Debian's
# wine64 package installs /usr/bin/wine64 (and /usr/lib/wine/wine64), the wine
# package /usr/bin/wine.
wine_launcher() {
	local c
	for c in wine64 wine /usr/lib/wine/wine64; do
		if command -v "$c" >/dev/null 2>&1; then
			command -v "$c"
			return 0
		fi
	done
	return 1
}


# 1. Packages.
pkgs=()
if ! wine_launcher >/dev/null; then
	pkgs+=(wine64)
fi
if ! command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1; then
	pkgs+=(gcc-mingw-w64-x86-64-win32)
fi
if ! have_ca_bundle; then
	pkgs+=(ca-certificates)
fi
if [ ${#pkgs[@]} -gt 0 ]; then
	echo "wine.sh: installing ${pkgs[*]}"
	# A machine that cannot install them (no apt, no root, no mirror) skips
	# the Windows run loudly rather than fail everything else; a test that
	# fails under Wine still fails CI.
	if ! apt_install "${pkgs[@]}"; then
		echo "wine.sh: WARNING: could not install ${pkgs[*]}; the Windows tests did NOT run" >&2
		exit 0
	fi
fi
WINE=$(wine_launcher) || {
	echo "wine.sh: no wine launcher found after installing wine64" >&2
	exit 1
}

# Quiet Wine: no debug channels, and no offer to install Mono or Gecko (which
# would wait for a click that never comes).
export WINEDEBUG=-all
export WINEDLLOVERRIDES="mscoree,mshtml="
export WINEARCH=win64
export WINEPREFIX=${SHALE_WINEPREFIX:-$HOME/.cache/shale-ci/wine-prefix}

# 2. Prefix.
if [ ! -f "$WINEPREFIX/system.reg" ]; then
	echo "wine.sh: creating the Wine prefix $WINEPREFIX"
	mkdir -p "$WINEPREFIX"
	# wineboot comes with the launcher; the 64-bit loader runs it as a program.
	"$WINE" wineboot --init >/dev/null 2>&1 || true
	"$(dirname "$WINE")/wineserver" -w 2>/dev/null || wineserver -w 2>/dev/null || true
	if [ ! -d "$WINEPREFIX/drive_c/windows/system32" ]; then
		echo "wine.sh: wineboot did not create $WINEPREFIX/drive_c/windows/system32" >&2
		exit 1
	fi
fi

# 3. The ProcessPrng stub, rebuilt when its source changes.
build=$WINEPREFIX/../shale-wine-build
mkdir -p "$build"
dll=$build/bcryptprimitives.dll
if [ ! -f "$dll" ] || [ .ci/wine/processprng.c -nt "$dll" ]; then
	echo "wine.sh: building the bcryptprimitives.dll stub"
	x86_64-w64-mingw32-gcc -O2 -shared -s -o "$dll" .ci/wine/processprng.c -ladvapi32
fi
sys32=$WINEPREFIX/drive_c/windows/system32
if ! cmp -s "$dll" "$sys32/bcryptprimitives.dll"; then
	cp "$dll" "$sys32/bcryptprimitives.dll"
fi

# 4. Tests. cgo stays off: .ci/run turns it on for -race, and there is no
# Windows C toolchain behind CC.
#
# One wineserver stays up for the whole run (-p): otherwise it exits a few
# seconds after each test binary, and the next binary can connect to it while
# it shuts down and die with "wine client error: ... Connection reset by peer"
# before running a single test. The services Wine starts with its first
# program (winedevice.exe) live as long as the server and would hold on to
# that program's stdout, so go test would wait for it forever: wineboot starts
# them first, with nothing of ours open. A package whose failure carries one
# of Wine's own errors (never a test's output) is run once more; any other
# failure fails.
timeout_s=${SHALE_WINE_TIMEOUT:-600}
WINESERVER=$(dirname "$WINE")/wineserver
[ -x "$WINESERVER" ] || WINESERVER=$(command -v wineserver || true)
if [ -n "$WINESERVER" ]; then
	"$WINESERVER" -k 2>/dev/null || true
	"$WINESERVER" -p
	trap '"$WINESERVER" -k 2>/dev/null || true' EXIT
	"$WINE" wineboot </dev/null >/dev/null 2>&1 || true
fi
wine_infra_error='^wine client error|^wine: (could not|failed to|cannot)|wineserver: '
run_tests() {
	echo "+ GOOS=windows go test -exec $(basename "$WINE") $*"
	local log rc=0
	log=$(mktemp)
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 timeout "$timeout_s" go test -exec "$WINE" -count=1 "$@" 2>&1 | tee "$log" || rc=$?
	if [ "$rc" -eq 0 ]; then
		rm -f "$log"
		return 0
	fi
	# Each package's output is printed in one piece ending in its "ok",
	# "FAIL" or "?" line: a failed package is retried when its piece holds
	# a Wine error and no test failure.
	local retry
	retry=$(awk -v re="$wine_infra_error" '
		/^(ok|FAIL|\?) *\t/ {
			if ($1 == "FAIL") { if (infra && !testfail) print $2; else bad = 1 }
			infra = 0; testfail = 0; next
		}
		$0 ~ re { infra = 1 }
		/^--- FAIL/ || /^panic:/ { testfail = 1 }
		END { if (bad) print "!" }' "$log")
	rm -f "$log"
	if [ -z "$retry" ] || printf '%s\n' "$retry" | grep -qx '!'; then
		return "$rc"
	fi
	# shellcheck disable=SC2086
	echo "wine.sh: Wine itself failed in $(echo $retry); running those packages once more"
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 timeout "$timeout_s" go test -exec "$WINE" -count=1 "${@:1:$#-1}" $retry
}
start=$(date +%s)
run_tests ./vfs/...
# Every package's tests (the long ones are skipped under -short): the model,
# crash, fault, corruption, metamorphic and concurrency tests of the root
# package run on the Windows file layer too.
run_tests -short ./...
echo "wine.sh: Windows tests passed under $("$WINE" --version 2>/dev/null || echo wine) in $(($(date +%s) - start)) s"
