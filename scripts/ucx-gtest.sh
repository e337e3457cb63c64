#!/bin/bash
# Build UCX's own gtest suite for the installed libucx0 version, with
# lib/ucx/gtest-coop.patch applied (instantiates the tests for transport
# "coop"), so an out-of-tree UCT module can be tested by LD_PRELOADing it:
#   LD_PRELOAD=.../libuct_coop.so "$(scripts/ucx-gtest.sh)" --gtest_filter='coop/*uct*'
# Built once (~8 min on 2 cores) in the cache next to scripts/ucx-src.sh's
# tree, keyed by version and patch hash; later runs only print the path.
# Progress goes to stderr, the gtest binary's path is the only line on stdout.
#
# The build tree holds absolute paths (libtool wrappers, module symlinks,
# TOP_SRCDIR compiled into gtest), so it is never moved: it is built in a
# hidden directory and published by renaming a symlink to it into place.
# An interrupted build leaves no published path and is restarted from scratch.
set -euo pipefail

die() {
	echo "ucx-gtest: $*" >&2
	exit 1
}

here=$(cd "$(dirname "$0")/.." && pwd)
patch_file=$here/lib/ucx/gtest-coop.patch
[[ -f $patch_file ]] || die "missing $patch_file"
src=$("$here/scripts/ucx-src.sh")
cache=${src%/*}
version=${src##*/ucx-}
hash=$(sha256sum <"$patch_file")
name=ucx-gtest-$version-${hash:0:12}
out=$cache/$name
gtest=$out/build/test/gtest/gtest
log=$cache/$name.log

if [[ -x $gtest ]]; then
	echo "$gtest"
	exit 0
fi

for tool in autoreconf libtoolize g++ patch; do
	command -v "$tool" >/dev/null || die "$tool missing (run scripts/deps.sh)"
done

exec 9>"$cache/$name.lock"
if ! flock -n 9; then
	echo "ucx-gtest: waiting for another build of $name" >&2
	flock 9
fi
if [[ -x $gtest ]]; then
	echo "$gtest"
	exit 0
fi
rm -rf "$out" "$cache/.$name".*
work=$(mktemp -d "$cache/.$name.XXXXXX")
trap 'rm -rf "$work" "$work.link"' EXIT

build() {
	cp -a "$src/." "$work/"
	cd "$work"
	patch -p1 --batch <"$patch_file"
	./autogen.sh
	mkdir build
	cd build
	# gcc 12 fails test/gtest/ucm/malloc_hook.cc with -Werror=use-after-free.
	# GTEST_CXXFLAGS reaches only gtest; `make CXXFLAGS=...` cannot be used at
	# the top level (which builds test/gtest too: it would override
	# src/tools/perf/lib's `CXXFLAGS += -nostdlib`, and ucx_perftest fails to link).
	GTEST_CXXFLAGS=-Wno-error ../configure --enable-mt --disable-backtrace-detail \
		--disable-logging --enable-devel-headers --enable-cma --enable-gtest \
		--without-verbs --without-rdmacm --without-java --without-go
	nice -n 19 make -j2
}

echo "ucx-gtest: building $out (~8 min; log: $log)" >&2
start=$SECONDS
set +e
(
	PS4='+ $(date +%T) '
	set -ex
	build
) >"$log" 2>&1
rc=$?
set -e
if ((rc != 0)) || [[ ! -x $work/build/test/gtest/gtest ]]; then
	tail -n 40 "$log" >&2
	die "build failed (exit $rc), full log: $log"
fi

ln -s "${work##*/}" "$work.link"
mv -T "$work.link" "$out"
trap - EXIT
echo "ucx-gtest: built in $((SECONDS - start)) s" >&2
. "$here/scripts/cache-prune.sh"
cache_prune "$cache" ucx-gtest- "$name"
echo "$gtest"
