#!/usr/bin/env bash
# Runs the DMA-engine channel tests (Check suite "coopmpi-dma" of
# tests/kmod/test_kmod) in the QEMU VM, once per engine:
#
#   hw    the TEST ONLY dmaengine provider tests/dmatest/coopmpi_dmatest.ko
#         is loaded first, then coopmpi.ko dma=hw (load fails without a
#         channel), so the dmaengine path runs; both are rmmod'ed after
#   hw-bounce  the same on a kernel booted with swiotlb=force: every
#         mapping bounces, as on a confidential VM, so a mapping wider
#         than the bytes copied reverts the rest (test_dma_partial_page)
#   soft  coopmpi.ko dma=soft: kernel workers copy
#   off   coopmpi.ko dma=off: everything refuses cleanly
#
# usage: scripts/vm-dma-tests.sh [hw|hw-bounce|soft|off ...]
#        (default: all four)
# Exit status 0 only when every run passed.  The plain driver suite
# (make -C tests/kmod vm-check) runs the same DMA tests with dma=auto,
# i.e. the soft engine in a VM without DMA hardware.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/stage.sh

make -s -C kmod && make -s -C tests/dmatest && make -s -C tests/kmod || exit 1

modes=("$@")
((${#modes[@]})) || modes=(hw hw-bounce soft off)
rc=0
for m in "${modes[@]}"; do
	append=
	case $m in
	hw | hw-bounce)
		[[ $m == hw ]] || append=swiotlb=force
		args=(--extra-module tests/dmatest/coopmpi_dmatest.ko
			--module kmod/coopmpi.ko --modparams "dma=hw dma_timeout_ms=2000")
		expect=hw
		;;
	soft)
		args=(--module kmod/coopmpi.ko --modparams dma=soft)
		expect=soft
		;;
	off)
		args=(--module kmod/coopmpi.ko --modparams dma=off)
		expect=none
		;;
	*)
		echo "vm-dma-tests: unknown engine '$m' (hw, hw-bounce, soft or off)" >&2
		exit 2
		;;
	esac
	printf '\n==== dma-%s ====\n' "$m"
	start=$SECONDS
	COOP_VM_APPEND="${COOP_VM_APPEND:+$COOP_VM_APPEND }$append" scripts/vm/run "${args[@]}" -- env CK_RUN_SUITE=coopmpi-dma \
		COOP_TEST_EXPECT_DMA_ENGINE=$expect tests/kmod/test_kmod
	r=$?
	stage_line "dma-$m" "$r" "$start"
	[ "$r" -eq 0 ] || rc=1
done
exit $rc
