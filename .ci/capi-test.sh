#!/usr/bin/env bash
# capi-test.sh: the test of shale's C API (cmd/libshale). It builds the
# library with -buildmode=c-shared and -buildmode=c-archive, checks that
# shale.h declares exactly what the library exports, with the prototypes cgo
# generates, then compiles cmd/libshale/test/shale_test.c with AddressSanitizer
# (LeakSanitizer runs at exit) and runs it against both builds. A last run
# with --leak, which forgets to free one value on purpose, must be reported
# by LeakSanitizer: it shows that the checker works here.
#
# Why ASan and not valgrind: valgrind 3.19 cannot read the DWARF 5 that Go
# writes, reports hundreds of invalid reads and writes on goroutine stacks
# (which it sees as a client switching stacks), and hung in our trial. ASan
# instruments only the C program, but its malloc and free replace libc's for
# the whole process, the Go library's C.malloc and C.free included: a value or
# error string the library allocates and nobody frees is a leak LeakSanitizer
# reports, and a length the library gets wrong makes the C side read past a
# malloc'd block, which ASan reports. Go's own heap is not malloc'd, so it is
# not scanned (Go is memory-safe there), and no suppression is needed.
#
# Installs gcc (which brings libasan) when missing. Run from anywhere in a
# checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/lib.sh

asan_works() {
	command -v gcc >/dev/null 2>&1 &&
		echo 'int main(void){return 0;}' | gcc -x c -fsanitize=address -o /dev/null - 2>/dev/null
}
if ! asan_works; then
	echo "installing gcc (with libasan)"
	apt_install gcc libc6-dev
fi
export CGO_ENABLED=1 CC=gcc

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lib=cmd/libshale

echo "+ go build -buildmode=c-shared -o $work/shared/libshale.so ./$lib"
go build -buildmode=c-shared -o "$work/shared/libshale.so" "./$lib"
echo "+ go build -buildmode=c-archive -o $work/archive/libshale.a ./$lib"
go build -buildmode=c-archive -o "$work/archive/libshale.a" "./$lib"

# shale.h and the header cgo writes, in one translation unit: any prototype
# that differs (a missing const, a wrong type) is a conflicting declaration.
printf '#include "shale.h"\n#include "libshale.h"\n' >"$work/headers.c"
gcc -std=c11 -Wall -Werror -fsyntax-only -I"$lib" -I"$work/shared" "$work/headers.c"

# Every function shale.h declares is exported, and nothing else is.
declared=$(grep -oE '\bshale_[A-Za-z0-9_]+\(' "$lib/shale.h" | tr -d '(' | sort -u)
exported=$(nm -D --defined-only "$work/shared/libshale.so" | awk '$2 == "T" && $3 ~ /^shale_/ {print $3}' | sort -u)
if [ "$declared" != "$exported" ]; then
	echo "shale.h and libshale.so disagree (< declared only, > exported only):" >&2
	diff <(echo "$declared") <(echo "$exported") >&2 || true
	exit 1
fi
echo "shale.h declares the $(echo "$declared" | wc -l) functions libshale.so exports"

cflags=(-std=c11 -Wall -Wextra -Werror -g -pthread -fsanitize=address -fno-omit-frame-pointer -I"$lib")
gcc "${cflags[@]}" -o "$work/shale_test_shared" "$lib/test/shale_test.c" \
	-L"$work/shared" -lshale -Wl,-rpath,"$work/shared"
gcc "${cflags[@]}" -o "$work/shale_test_archive" "$lib/test/shale_test.c" \
	"$work/archive/libshale.a" -lpthread -lm

export ASAN_OPTIONS=detect_leaks=1:exitcode=23
for build in shared archive; do
	echo "+ shale_test ($build library, ASan and LSan)"
	"$work/shale_test_$build" "$work/db-$build"
done

echo "+ shale_test --leak (one value not freed on purpose: LeakSanitizer must report it)"
rc=0
"$work/shale_test_shared" "$work/db-leak" --leak >"$work/leak.log" 2>&1 || rc=$?
if [ "$rc" -ne 23 ] || ! grep -q 'LeakSanitizer: detected memory leaks' "$work/leak.log"; then
	cat "$work/leak.log" >&2
	echo "the deliberate leak was not reported (exit code $rc): the leak check does not work here" >&2
	exit 1
fi
grep 'SUMMARY' "$work/leak.log"
echo "capi-test: ok"
