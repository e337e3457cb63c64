#!/bin/bash
# tests/ucx/gtest.sh - UCX's own gtest suite against the transport coop:
# the UCT tests of coop (coop/*uct*) and UCP's tag tests
# (test_ucp_tag_xfer.*, test_ucp_tag_match_rndv.*) over "posix,coop,self"
# (instance coop: posix carries the messages, coop the rendezvous) and over
# "coop,self" (instance coop_only: coop carries everything), and UCP's
# wakeup tests (test_ucp_wakeup*: workers sleeping on the event fd) over both.
# gtest is UCX 1.13.1's, built from Debian's source with lib/ucx/gtest-coop.patch
# (coop in its transport lists) by scripts/ucx-gtest.sh and cached outside the
# tree (~8 min the first time on 2 cores, then nothing).  The module comes in
# with LD_PRELOAD, as under MPI.  Last line: "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

gtest=$(scripts/ucx-gtest.sh | tail -n 1) || { echo "gtest build failed"; exit 1; }
module=$PWD/lib/ucx/libuct_coop.so
log=$(mktemp -d) || exit 1
trap 'rm -rf "$log"' EXIT
passed=0 failed=0

# start NAME FILTER: one gtest run, in the background
start() {
	echo "gtest $1: $2"
	LD_PRELOAD=$module timeout 1800 "$gtest" --gtest_filter="$2" \
		>"$log/$1" 2>&1 &
	pids[$1]=$!
}

# count NAME: waits for the run NAME and adds its counts
count() {
	local out=$log/$1 n f rc
	wait "${pids[$1]}"
	rc=$?
	n=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
	echo "gtest $1:"
	grep -E '^\[  FAILED  \] coop' "$out"
	grep -E '^\[==========\]' "$out" | tail -n 1
	if ((rc != 0)) && [[ -z $f ]]; then	# crashed or timed out
		tail -n 30 "$out"
		f=1
	fi
	passed=$((passed + ${n:-0}))
	failed=$((failed + ${f:-0}))
}

# run NAME FILTER: one gtest run in the foreground
run() {
	start "$1" "$2"
	count "$1"
}

declare -A pids
run uct 'coop/*uct*'
# the memory domain: registration, md:coop's allocation (the shared heap), fork
run md 'coop/test_md*'
# the two UCP tag runs take minutes each, on one core each: side by side
start ucp-tag 'coop/test_ucp_tag_xfer.*:coop/test_ucp_tag_match_rndv.*'
start ucp-tag-coop-only 'coop_only/test_ucp_tag_xfer.*:coop_only/test_ucp_tag_match_rndv.*'
count ucp-tag
count ucp-tag-coop-only
run ucp-wakeup 'coop*/test_ucp_wakeup*'
echo "$passed passed, $failed failed"
((failed == 0 && passed > 0))
