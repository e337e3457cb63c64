#!/usr/bin/env bash
# bench/vm-stage.sh OUTDIR MODE... - the benchmark runs that need coopmpi.ko.
# bench/run-suite.sh starts it inside the QEMU VM (scripts/vm/run, module
# loaded, OUTDIR writable through --rw); it is not meant to be run by hand.
#
#   lib    libcoopmpi with COOP_PROVIDER=kmod and =shm (same VM, so their
#          ratio means something), every rendezvous protocol: pingpong, bw
#   dma    bench/bin/dma_bw: the driver's DMA channel vs. COOPMPI_IOC_COPY
#   window bench/bin/window_bw: a copy through a window vs. COOPMPI_IOC_COPY
#          vs. process_vm_readv, 64 KiB - 16 MiB
#   stripe bench/bw on the kmod provider, one message at a time: offload
#          striping (COOP_RNDV=stripe, ratio measured) vs. the CPU alone
#          (rput) and the engine alone (dma)
#   hca    the HCA-loopback engine (COOP_ENGINE=hca) over Soft-RoCE in
#          the same way, series hca-rput/hca-stripe/hca-dma, and rput/dma
#          with no registration kept (COOP_HCA_MR_CACHE=0: -nokeep) (the
#          VM must have rdma_rxe: bench/lib/run.sh loads it in the hw VM)
#   patterns  bench/bin/patterns and bench/bin/stencil, 4 ranks, kmod
#          provider, every protocol of run-suite.sh patterns (boot the VM
#          with --smp 4: a CPU per rank)
#   ucx    bench/bin/mpi_peer under MPICH and Open MPI, unmodified: each
#          MPI's default path vs. UCX with the coop transport on the
#          driver (kmod provider), 8 B latency, 1 and 4 MiB bandwidth
#   smoke-lib  every libcoopmpi program once on the kmod provider, tiny sizes
#   smoke-dma  dma_bw once, tiny sizes
#   smoke-window  window_bw once, tiny sizes
#
# Each run writes OUTDIR/NAME.out (stdout) and NAME.err and appends
# "NAME|csv|series|columns|sizes" to OUTDIR/manifest; run-suite.sh checks
# and ingests them after the VM is gone.  DMA_TAG (environment) names the
# DMA engine for the series (dma-soft, dma-hw).  Exit status: 0 when every
# run exited 0.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

outdir=${1:?outdir}
shift
dma_tag=${DMA_TAG:-dma}
failed=0
count=0

# one NAME CSV SERIES COLUMNS "SIZES" cmd...
one() {
	local name=$1 csv=$2 series=$3 cols=$4 sizes=$5 t0=$SECONDS rc=0
	shift 5
	count=$((count + 1))
	"$@" >"$outdir/$name.out" 2>"$outdir/$name.err" || rc=$?
	echo "$name|$csv|$series|$cols|$sizes" >>"$outdir/manifest"
	if ((rc)); then
		failed=$((failed + 1))
		echo "vm-stage: $name FAILED (exit $rc, $((SECONDS - t0))s)"
		tail -n 5 "$outdir/$name.err" | sed 's/^/vm-stage:   /'
	else
		echo "vm-stage: $name ok ($((SECONDS - t0))s)"
	fi
}

coop() {
	coopn 2 "$@"
}

# the MPI peers (ompi, mpich, ompi_coop, mpich_coop) on the VM's CPUs
tmo=300
ncpu=$(nproc)
# shellcheck source=bench/lib/mpi.sh
. bench/lib/mpi.sh

# coopn N PROVIDER PROTO PROG ARGS...
coopn() {
	local n=$1 prov=$2 proto=$3
	shift 3
	env COOP_PROVIDER="$prov" COOP_RNDV="$proto" scripts/cooprun -n "$n" -t 300 "$@"
}

for mode in "$@"; do
	case $mode in
	lib)
		# small: under TCG every exec costs ~1 s and copies ~100x less
		lat_sizes="8 1048576"
		bw_sizes="262144 1048576"
		for proto in rget rput rtr coop auto; do
			for prov in kmod shm; do
				# shellcheck disable=SC2086 # size lists split on purpose
				one "vm-lat-$prov-$proto" vm_latency "$prov-$proto" 1 "$lat_sizes" \
					coop "$prov" "$proto" bench/pingpong -i 50 -r 3 $lat_sizes
				# shellcheck disable=SC2086
				one "vm-bw-$prov-$proto" vm_bw "$prov-$proto" 1 "$bw_sizes" \
					coop "$prov" "$proto" bench/bw -i 2 -r 3 -w 16 $bw_sizes
			done
		done
		;;
	ucx)
		for peer in mpich:mpich mpich_coop:mpich-ucxcoop \
			ompi:openmpi ompi_coop:openmpi-ucxcoop; do
			run=${peer%%:*} series=${peer#*:}
			one "vm-ucx-lat-$series" vm_ucx_latency "$series" 1 8 \
				"$run" -V -t lat -i 200 -r 3 8
			one "vm-ucx-bw-$series" vm_ucx_bw "$series" 1 "1048576 4194304" \
				"$run" -t bw -i 2 -r 3 -w 4 1048576 4194304
		done
		;;
	dma)
		sizes="65536 1048576 4194304"
		# shellcheck disable=SC2086
		one "vm-$dma_tag" dma "$dma_tag" 4 "$sizes" bench/bin/dma_bw -i 4 -r 3 -q 4 $sizes
		;;
	window)
		sizes="65536 262144 1048576 4194304 16777216"
		# shellcheck disable=SC2086
		one vm-window window window 3 "$sizes" bench/bin/window_bw -r 3 $sizes
		;;
	patterns)
		# small: under TCG copies are ~100x slower than natively
		sizes="262144 1048576"
		for proto in rput rget coop auto; do
			for pat in scatter gather reduce; do
				# shellcheck disable=SC2086 # size lists split on purpose
				one "vm-$pat-n4-$proto" "vm_${pat}_n4" "$proto" 12 "$sizes" \
					coopn 4 kmod "$proto" bench/bin/patterns -p "$pat" -i 10 $sizes
			done
			one "vm-stencil-4x1x1-$proto" vm_stencil_4x1x1 "$proto" 14 4 \
				coopn 4 kmod "$proto" bench/bin/stencil -d 4x1x1 -m 262144 -i 20
		done
		;;
	stripe)
		sizes="1048576 4194304 16777216"
		for proto in rput stripe dma; do
			# shellcheck disable=SC2086
			one "vm-stripe-${dma_tag#dma-}-$proto" vm_stripe "${dma_tag#dma-}-$proto" 1 "$sizes" \
				env COOP_VERBOSE=1 COOP_PROVIDER=kmod COOP_RNDV="$proto" \
				scripts/cooprun -n 2 -t 300 bench/bw -i 4 -r 3 -w 1 $sizes
		done
		;;
	hca)
		sizes="1048576 4194304 16777216"
		scripts/vm/rxe-up || { failed=$((failed + 1)); continue; }
		# -nokeep: every message registers its buffers anew
		for series in rput stripe dma rput-nokeep dma-nokeep; do
			keep=32
			[[ $series == *-nokeep ]] && keep=0
			# shellcheck disable=SC2086
			one "vm-stripe-hca-$series" vm_stripe "hca-$series" 1 "$sizes" \
				env COOP_VERBOSE=1 COOP_PROVIDER=kmod COOP_ENGINE=hca \
				COOP_RNDV="${series%-nokeep}" COOP_HCA_MR_CACHE=$keep \
				scripts/cooprun -n 2 -t 300 bench/bw -i 4 -r 3 -w 1 $sizes
		done
		;;
	smoke-lib)
		one vm-smoke-pingpong vm_latency kmod-coop 1 "8 131072" \
			coop kmod coop bench/pingpong -i 4 -r 1 8 131072
		one vm-smoke-bw vm_bw kmod-coop 1 "8 131072" \
			coop kmod coop bench/bw -i 2 -r 1 -w 4 8 131072
		one vm-smoke-bibw vm_bibw kmod-coop 1 "8 131072" \
			coop kmod coop bench/bin/bibw -i 2 -r 1 -w 4 8 131072
		one vm-smoke-mbw_mr vm_mbw_mr kmod-coop 2 "8 131072" \
			coop kmod coop bench/bin/mbw_mr -i 2 -r 1 -w 4 8 131072
		one vm-smoke-overlap vm_overlap kmod-coop 4 "131072" \
			coop kmod coop bench/bin/overlap -i 2 -r 1 131072
		one vm-smoke-patterns vm_reduce_n2 kmod-auto 10 "131072" \
			coopn 2 kmod auto bench/bin/patterns -p reduce -i 2 131072
		one vm-smoke-stencil vm_stencil_2x1x1 kmod-auto 14 2 \
			coopn 2 kmod auto bench/bin/stencil -d 2x1x1 -m 131072 -i 4
		;;
	smoke-dma)
		one "vm-smoke-$dma_tag" dma "$dma_tag" 4 "65536" \
			bench/bin/dma_bw -i 2 -r 1 -q 4 65536
		;;
	smoke-window)
		one vm-smoke-window window window 3 "65536" \
			bench/bin/window_bw -i 2 -r 1 65536
		;;
	*)
		echo "vm-stage: unknown mode '$mode'" >&2
		exit 2
		;;
	esac
done
echo "vm-stage: $*: $count runs, $failed failed"
((failed == 0))
