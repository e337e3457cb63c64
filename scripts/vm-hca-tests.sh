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
# modules: they are loaded with their dependencies (modprobe
# --show-depends).  A kernel of scripts/vm/debug-kernel has them built in
# (COOP_VM_KERNEL_DIR; coopmpi.ko must then be built against it:
# COOP_HCA_KMOD=<its coopmpi.ko>).
#
# usage: scripts/vm-hca-tests.sh [shm|kmod ...]   (default: both)
#        COOP_HCA_CASES="hca dma ..." narrows the cases.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/stage.sh

make -s -C kmod && make -s -C lib && make -s -C tests/lib || exit 1

# The VM's kernel version, as scripts/vm/run picks it.
vm_kernel() {
	if [[ -n ${COOP_VM_KERNEL:-} ]]; then
		echo "$COOP_VM_KERNEL"
		return
	fi
	for d in /lib/modules/*/; do
		v=$(basename "$d")
		[[ -r /boot/vmlinuz-$v && -e $d/build/Makefile ]] && echo "$v"
	done | sort -V | tail -n 1
}

# --extra-module arguments for Soft-RoCE on kernel $1, in load order.
rxe_modules() {
	local m ko
	for m in crc32_generic veth rdma_rxe; do
		modprobe --show-depends -S "$1" "$m" || return 1
	done | while read -r what ko _; do
		[[ $what == insmod ]] && printf -- '--extra-module\n%s\n' "$ko"
	done
}

extra=()
if [[ -z ${COOP_VM_KERNEL_DIR:-} ]]; then
	kver=$(vm_kernel)
	mapfile -t extra < <(rxe_modules "$kver")
	((${#extra[@]})) || { echo "vm-hca-tests: no rdma_rxe for $kver" >&2; exit 1; }
fi
kmod=${COOP_HCA_KMOD:-kmod/coopmpi.ko}
cases=${COOP_HCA_CASES:-hca dma fault select xfer}

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
		COOP_PROVIDER="$p" CASES="$cases" sh -c 'scripts/vm/rxe-up &&
		r=0; for c in $CASES; do
			CK_RUN_CASE=$c tests/lib/test_lib || r=1
		done; exit $r'
	r=$?
	stage_line "hca-$p" "$r" "$start"
	[ "$r" -eq 0 ] || rc=1
done
exit $rc
