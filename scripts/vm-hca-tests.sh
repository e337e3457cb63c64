#!/usr/bin/env bash
# Runs the HCA-loopback engine's tests (COOP_ENGINE=hca) in the QEMU VM
# over Soft-RoCE: scripts/vm/rxe-up makes rxe0 on a veth pair, then the
# library suite's cases that use an offload engine run on the HCA engine,
# once per provider:
#
#   shm   COOP_PROVIDER=shm (the user-space provider under the engine)
#   kmod  COOP_PROVIDER=kmod (coopmpi.ko loaded)
#
# Cases: hca (set-up refusals, hca_* counters, bad keys), dma (RPUT by
# the engine, striping, COOP_OFFLOAD_BUSY on hca_bytes), fault (a rank
# killed mid-transfer, for each protocol), select (an RPUT cell
# stripes), xfer (COOP_XFER_ENGINE/STRIPE jobs; dynamic endpoints are
# refused).  Debian's kernel has rdma_rxe, veth and crc32_generic as
# modules: scripts/vm/rxe-modules loads them.  A kernel of
# scripts/vm/debug-kernel has them built in (COOP_VM_KERNEL_DIR;
# coopmpi.ko must then be built against it: COOP_TEST_HCA_KMOD=<its
# coopmpi.ko>).
#
# usage: scripts/vm-hca-tests.sh [shm|kmod ...]   (default: both)
#        COOP_TEST_HCA_CASES="hca dma ..." narrows the cases.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/stage.sh

make -s -C kmod && make -s -C lib && make -s -C tests/lib || exit 1

rxe=$(scripts/vm/rxe-modules) || exit 1
extra=()
[[ -z $rxe ]] || mapfile -t extra <<<"$rxe"
kmod=${COOP_TEST_HCA_KMOD:-kmod/coopmpi.ko}
cases=${COOP_TEST_HCA_CASES:-hca dma fault select xfer}

provs=("$@")
((${#provs[@]})) || provs=(shm kmod)
rc=0
for p in "${provs[@]}"; do
	case $p in
	shm) mod=() ;;
	kmod) mod=(--module "$kmod") ;;
	*)
		echo "vm-hca-tests: unknown provider '$p' (shm or kmod)" >&2
		exit 2
		;;
	esac
	printf '\n==== hca-%s ====\n' "$p"
	start=$SECONDS
	# shellcheck disable=SC2016 # expanded in the VM
	scripts/vm/run "${extra[@]}" "${mod[@]}" -- env COOP_ENGINE=hca \
		COOP_PROVIDER="$p" CASES="$cases" sh -c 'scripts/vm/rxe-up || exit 1
		r=0; for c in $CASES; do
			CK_RUN_CASE=$c tests/lib/test_lib || r=1
		done
		[ $r -eq 0 ] || scripts/vm/rxe-up --show; exit $r'
	r=$?
	stage_line "hca-$p" "$r" "$start"
	[ "$r" -eq 0 ] || rc=1
done
exit $rc
