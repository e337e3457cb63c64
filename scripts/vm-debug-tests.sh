#!/usr/bin/env bash
# Runs the driver's tests in the QEMU VM on the debug kernel
# (scripts/vm/debug-kernel: KASAN, lockdep, DEBUG_ATOMIC_SLEEP, kmemleak,
# KFENCE, UBSAN, DEBUG_LIST), with coopmpi.ko built against it:
#
#   kmod      the driver suite tests/kmod/test_kmod, the fuzz test included
#             (dma=auto: the soft engine)
#   load      its load test (suite coopmpi-load) for 2 minutes: users,
#             endpoints, descriptors and kills at random moments, then
#             kmemleak after the module's removal
#   dma-hw    its DMA suite on the dmaengine path (the test-only provider
#             tests/dmatest/coopmpi_dmatest.ko)
#   dma-bounce  the same booted with swiotlb=force: every mapping bounces
#   lib       the library suite on the driver (COOP_PROVIDER=kmod)
#   hca       the HCA engine's case over Soft-RoCE (rxe built in), on the
#             driver (scripts/vm-hca-tests.sh kmod, case hca)
#   canaries  the kernel's own leaking and out-of-bounds test modules
#             (kmemleak-test.ko, kasan_test_module.ko): each run must
#             fail with its report, or the stage could not see one
#
# A run fails on any report in the kernel log (scripts/vm/init's pattern:
# KASAN, lockdep, UBSAN, KFENCE, a sleep in atomic context, list
# corruption, WARN) and on what kmemleak finds after the modules are
# removed.
# usage: scripts/vm-debug-tests.sh [kmod|load|dma-hw|dma-bounce|lib|hca|canaries ...]
#        (default: all)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/stage.sh

kdir=$(scripts/vm/debug-kernel) || exit 1
make -s -C tests/kmod && make -s -C lib && make -s -C tests/lib || exit 1

# The modules, built against the debug kernel in a copy of their sources
# (kmod/ keeps the build for the installed kernel).
mods=$(mktemp -d /tmp/coopmpi-debug-mods.XXXXXX) || exit 1
trap 'rm -rf "$mods"' EXIT
mkdir -p "$mods/tests" &&
	cp -r kmod include "$mods/" && cp -r tests/dmatest "$mods/tests/" &&
	make -s -C "$mods/kmod" clean >/dev/null 2>&1
make -s -C "$mods/kmod" KDIR="$kdir/build" &&
	make -s -C "$mods/tests/dmatest" KDIR="$kdir/build" || exit 1

vm() { COOP_VM_KERNEL_DIR=$kdir COOP_VM_TIMEOUT=2400 scripts/vm/run "$@"; }

# canary PATTERN COMMAND...: COMMAND, in the VM, must fail the run with a
# kernel report matching PATTERN
canary() {
	local pattern=$1 log
	shift
	log=$mods/canary.log
	if vm -- "$@" >"$log" 2>&1; then
		tail -n 20 "$log"
		echo "canary $*: the run passed: the checks did not see the report"
		return 1
	fi
	if ! grep -Eq "$pattern" "$log"; then
		tail -n 40 "$log"
		echo "canary $*: failed, but without a report matching '$pattern'"
		return 1
	fi
	echo "canary ${*##*/}: caught ($(grep -Em1 "$pattern" "$log"))"
}

canaries() {
	canary 'suspected memory leak' sh -c \
		"insmod $kdir/build/samples/kmemleak/kmemleak-test.ko && rmmod kmemleak_test" || return 1
	# its first case trips hardened usercopy's WARN, which panic_on_warn
	# would turn into a panic before any KASAN report: without it, the
	# reports must fail the run through the kernel log check
	COOP_VM_APPEND=panic_on_warn=0 canary 'BUG: KASAN' \
		insmod "$kdir/build/mm/kasan/kasan_test_module.ko"
}

runs=("$@")
((${#runs[@]})) || runs=(canaries kmod load dma-hw dma-bounce lib hca)
rc=0
for r in "${runs[@]}"; do
	printf '\n==== debug-%s ====\n' "$r"
	start=$SECONDS
	case $r in
	kmod)
		vm --module "$mods/kmod/coopmpi.ko" -- tests/kmod/test_kmod
		;;
	load)
		vm --module "$mods/kmod/coopmpi.ko" -- env \
			CK_RUN_SUITE=coopmpi-load COOP_TEST_LOAD_SECONDS=120 \
			tests/kmod/test_kmod
		;;
	dma-hw | dma-bounce)
		append=
		[[ $r == dma-hw ]] || append=swiotlb=force
		COOP_VM_APPEND=$append vm \
			--extra-module "$mods/tests/dmatest/coopmpi_dmatest.ko" \
			--module "$mods/kmod/coopmpi.ko" \
			--modparams "dma=hw dma_timeout_ms=2000" -- \
			env CK_RUN_SUITE=coopmpi-dma COOP_TEST_EXPECT_DMA_ENGINE=hw \
			tests/kmod/test_kmod
		;;
	lib)
		vm --module "$mods/kmod/coopmpi.ko" -- \
			env COOP_PROVIDER=kmod tests/lib/test_lib
		;;
	hca)
		COOP_VM_KERNEL_DIR=$kdir COOP_VM_TIMEOUT=2400 \
			COOP_TEST_HCA_KMOD=$mods/kmod/coopmpi.ko COOP_TEST_HCA_CASES=hca \
			scripts/vm-hca-tests.sh kmod
		;;
	canaries)
		canaries
		;;
	*)
		echo "vm-debug-tests: unknown run '$r' (kmod, load, dma-hw, dma-bounce, lib, hca or canaries)" >&2
		exit 2
		;;
	esac
	s=$?
	stage_line "debug-$r" "$s" "$start"
	[ "$s" -eq 0 ] || rc=1
done
exit $rc
