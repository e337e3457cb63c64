#!/usr/bin/env bash
# scripts/check.sh - the test stages of `make check` and `make check-full`.
#
#   scripts/check.sh              the quick tier (make check, what CI runs)
#   scripts/check.sh --full       the quick tier, then the full tier's
#                                 stages (make check-full)
#   scripts/check.sh NAME...      the named stages, in the order given
#   scripts/check.sh --list       every stage: name, tier, what it runs
#
# The table STAGES below is the one place that says which stage exists and
# to which tier it belongs; each stage's commands are the function
# stage_NAME (dashes as underscores).  A stage fails on a non-zero exit;
# the run fails if any stage failed.  Every run ends with a table of each
# stage's result and seconds, the total, and a line "check: N passed,
# N failed" adding up the tests of every stage.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/stage.sh

# name                    tier   what it runs
STAGES='
module-w1                 quick  the module builds warning-free with W=1
layer-check               quick  lib/'"'"'s layers call only downward
layer-check-test          quick  the layer checker catches an upward call
field-check               quick  no layer of lib/ writes a field another layer owns
settings-check            quick  every COOP_ variable the project uses is a library setting or on its list of the project'"'"'s own
lib-native                quick  the library suite, shm provider
lib-sanitized             quick  the library suite with ASan + UBSan
lib-tsan                  quick  TSan: the threads, sleep and p2p cases with progress threads
kmod-vm                   quick  VM, Debian kernel: the driver suite (DMA on the soft engine)
kmod-dma-vm               quick  VM: the DMA suite on the test dmaengine provider (plain and with swiotlb=force) and dma=off
lib-vm                    quick  VM: the library suite on the driver (kmod provider)
ucx                       quick  the UCX transport under unmodified MPICH and Open MPI
ucx-vm-quick              quick  VM: the same, data checks and kills only, on the driver
ucx-mpich-quick           quick  MPICH test/mpi: tests/ucx/mpich-quick.list, both launchers
slurm                     quick  coopmpi-run under srun on a one-node Slurm: MPICH (pmi2) and Open MPI (pmix) through coop
nodes                     quick  jobs across 2 simulated nodes: every rank pair, the coop/network split, a node without coop, kills
diag                      quick  what users are told: fallback note, coop_info --status/--version/-c, the wrapper'"'"'s refusals
install                   quick  make install/uninstall; programs built with pkg-config coopmpi; the installed wrapper
dkms                      quick  the DKMS recipe: make install-dkms, dkms install, modinfo, modprobe in the VM
bench-smoke               quick  every benchmark once on tiny sizes
lib-tsan-rest             full   TSan: every other library case with a progress thread
lib-native-thread         full   the library suite with a polling progress thread
lib-vm-progress           full   VM: the library suite on the driver, sleeping progress thread
hca-vm                    full   VM: the HCA engine over Soft-RoCE, both providers
kmod-load-vm              full   VM, Debian kernel: the driver load test for 5 minutes (kmod-vm runs it 20 s)
debug-vm                  full   VM, debug kernel (KASAN, lockdep, kmemleak): driver, DMA, library, HCA
ucx-vm                    full   VM: tests/ucx/run.sh whole, on the driver
ucx-mpich-suite           full   MPICH test/mpi pt2pt, coll, rma, comm whole, both launchers
ucx-mpich-suite-coop-only full   its pt2pt programs with UCX_TLS=coop,self
ucx-mpi4py                full   python3-mpi4py through coop
ucx-mpich-suite-pml-ucx   full   the MPICH suite under Open MPI pml ucx
ucx-mpi4py-pml-ucx        full   mpi4py under Open MPI pml ucx
ucx-mpich-suite-vm        full   VM: 21 programs of the MPICH suite on the driver
nodes-suite               full   MPICH test/mpi (the quick list) across 2 simulated nodes, both MPIs
nodes-vm                  full   VM pair: MPI jobs across two VMs with the module, then one VM without it
ucx-gtest                 full   UCX'"'"'s gtest: coop'"'"'s UCT tests, UCP tag and wakeup tests
diag-vm                   full   VM: the fallback warnings for a device of mode 0600, a user limit, a module of another ABI
deb                       full   make deb: the four Debian packages, lintian without errors
packages-vm               full   VM, a clean Debian 12: the packages install, DKMS builds, MPI runs through them, purge
'

stage_names() { awk 'NF { print $1 }' <<<"$STAGES"; }
stage_tier() { awk -v n="$1" '$1 == n { print $2 }' <<<"$STAGES"; }

usage() {
	sed -n '2,/^set -uo/{/^set/d;s/^# \{0,1\}//;p}' "$0" >&2
	exit 2
}

# --- the stages -------------------------------------------------------------

vm() {
	scripts/vm/run --module kmod/coopmpi.ko -- "$@"
}

stage_module_w1() {
	make -s -C kmod clean >/dev/null
	local out
	out=$(make -C kmod 2>&1)
	printf '%s\n' "$out"
	if grep -qi 'warning:' <<<"$out"; then
		echo "module build printed warnings (W=1)"
		return 1
	fi
	[ -f kmod/coopmpi.ko ]
}

stage_layer_check() { make -s -C lib layer-check; }
stage_layer_check_test() { tests/layercheck/run.sh; }
stage_field_check() { scripts/field-check.sh; }
stage_settings_check() { scripts/settings-check.sh; }
stage_lib_native() { env COOP_PROVIDER=shm tests/lib/test_lib; }

# sanitized_copy DIR CFLAGS: the library and its tests built in DIR with
# CFLAGS, so the normal build stays as it is
sanitized_copy() {
	local dir=$1 flags=$2
	mkdir -p "$dir/tests" && cp -r include lib "$dir/" &&
		cp -r tests/lib "$dir/tests/" &&
		make -s -C "$dir/lib" clean >/dev/null &&
		make -s -C "$dir/tests/lib" clean >/dev/null &&
		make -s -C "$dir/tests/lib" CFLAGS="$flags"
}

# AddressSanitizer and UBSan: an out-of-bounds access, a use after free, a
# leak at exit or undefined behaviour aborts the rank, and so fails its
# test.
stage_lib_sanitized() {
	local dir=$log_dir/sanitized
	sanitized_copy "$dir" "-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined" ||
		return 1
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		COOP_PROVIDER=shm "$dir/tests/lib/test_lib"
}

# ThreadSanitizer: a data race between two threads of a rank ends the rank
# (halt_on_error), and so fails its test.  The threads case sets its own
# threads (application threads and progress threads on one context); the
# other cases run with a progress thread next to the rank's own
# (COOP_PROGRESS=thread-sleep, or LIB_TSAN_PROGRESS).  The reports go to
# files (log_path: some tests redirect a rank's stderr), printed after each
# case; one fails the stage even if its test passed.  -Wno-tsan: GCC warns
# that TSan does not model atomic_thread_fence; the ring's fences only
# order the doorbell's arming against a producer's look at it (who rings),
# no data is handed over through them.  Suppressions: tests/lib/tsan.supp,
# for third-party code only.  TSan sees what this process's threads do,
# not the copies of another rank or of the kernel (process_vm_readv).
#
# The quick tier's cases: threads (every thread mode on one context), sleep
# (ranks that sleep in the progress thread's wait) and p2p (every send mode
# and protocol with the thread copying beside the rank).
tsan_quick_cases='threads sleep p2p'

# lib_tsan CASE...: every case under TSan
lib_tsan() {
	local dir=$log_dir/tsan
	local opts="halt_on_error=1 second_deadlock_stack=1"
	local rc=0 c progress
	opts+=" suppressions=$PWD/tests/lib/tsan.supp log_path=$dir/report"
	[[ -x $dir/tests/lib/test_lib ]] ||
		sanitized_copy "$dir" "-O1 -g -fno-omit-frame-pointer -fsanitize=thread -Wno-tsan" ||
		return 1
	for c in "$@"; do
		progress=${LIB_TSAN_PROGRESS:-thread-sleep}
		[ "$c" = threads ] && progress=	# it sets its own
		env TSAN_OPTIONS="$opts" COOP_PROVIDER=shm CK_RUN_CASE="$c" \
			${progress:+COOP_PROGRESS=$progress} \
			"$dir/tests/lib/test_lib" || rc=1
		if compgen -G "$dir/report.*" >/dev/null; then
			echo "ThreadSanitizer reports of case $c:"
			cat "$dir"/report.*
			rm -f "$dir"/report.*
			rc=1
		fi
	done
	return $rc
}

stage_lib_tsan() {
	# shellcheck disable=SC2086 # a list of words
	lib_tsan $tsan_quick_cases
}

stage_lib_tsan_rest() {
	local cases
	cases=$(sed -n 's/.*tcase_create("\([^"]*\)").*/\1/p' tests/lib/t_*.c |
		grep -vxF -f <(tr ' ' '\n' <<<"$tsan_quick_cases"))
	# shellcheck disable=SC2086
	lib_tsan $cases
}

stage_lib_native_thread() {
	env COOP_PROVIDER=shm COOP_PROGRESS=thread tests/lib/test_lib
}

stage_kmod_vm() { vm tests/kmod/test_kmod; }
# kmod-vm ran the DMA suite on the soft engine (dma=auto in a VM without
# DMA hardware); here the dmaengine path, bouncing too, and dma=off
stage_kmod_dma_vm() { scripts/vm-dma-tests.sh hw hw-bounce off; }
stage_lib_vm() { vm env COOP_PROVIDER=kmod tests/lib/test_lib; }
stage_lib_vm_progress() {
	vm env COOP_PROVIDER=kmod COOP_PROGRESS=thread-sleep tests/lib/test_lib
}
stage_hca_vm() { scripts/vm-hca-tests.sh; }
stage_kmod_load_vm() {
	vm env CK_RUN_SUITE=coopmpi-load COOP_TEST_LOAD_SECONDS=300 tests/kmod/test_kmod
}
stage_debug_vm() { scripts/vm-debug-tests.sh; }

stage_ucx() { tests/ucx/run.sh; }
stage_ucx_vm_quick() { vm env COOP_IN_VM=1 tests/ucx/run.sh --quick; }
stage_ucx_vm() { vm env COOP_IN_VM=1 tests/ucx/run.sh; }
stage_ucx_mpich_quick() {
	tests/ucx/mpich-suite.sh --subset tests/ucx/mpich-quick.list
}
stage_ucx_mpich_suite() { tests/ucx/mpich-suite.sh; }
stage_ucx_mpich_suite_coop_only() {
	tests/ucx/mpich-suite.sh --tls coop,self --only '^pt2pt/'
}
stage_ucx_mpi4py() { tests/ucx/mpi4py-suite.sh; }
# Open MPI's pml ucx path (scripts/coopmpi-run -p ucx): ob1 + btl uct is
# the wrapper's default for Open MPI
stage_ucx_mpich_suite_pml_ucx() {
	env COOP_OMPI_PML=ucx tests/ucx/mpich-suite.sh --mpi openmpi
}
stage_ucx_mpi4py_pml_ucx() { env COOP_OMPI_PML=ucx tests/ucx/mpi4py-suite.sh; }
# the emulator is ~20x slower, and large_message needs more memory than
# the VM has: a part of the suite
mpich_suite_vm_subset='^(pt2pt/(sendrecv2|anyall|bottom|eagerdt|mprobe|manylmt|huge_anysrc|huge_ssend|huge_dupcomm|dtype_send|large_tag|rcancel)|coll/(iallred|coll7|alltoallw_zeros)|rma/(test1|transpose1|put_base|manyget|get_struct|rget_testall))$'
stage_ucx_mpich_suite_vm() {
	vm env COOP_TEST_SUITE_TIMEOUT=120 \
		tests/ucx/mpich-suite.sh --only "$mpich_suite_vm_subset"
}
stage_ucx_gtest() { tests/ucx/gtest.sh; }
stage_slurm() { tests/slurm/run.sh; }
stage_nodes() { tests/nodes/run.sh; }
stage_nodes_suite() { tests/nodes/run.sh --suite; }
stage_nodes_vm() { tests/nodes/vm-pair.sh; }
stage_diag() { tests/diag/run.sh; }
# the permission and limit cases, then a module built with another ABI
stage_diag_vm() {
	local d rc=0
	vm tests/diag/run.sh perm || rc=1
	d=$(mktemp -d)
	cp -r kmod include "$d/"
	make -s -C "$d/kmod" clean >/dev/null 2>&1
	if make -s -C "$d/kmod" W= KCFLAGS=-DCOOPMPI_ABI_VERSION=99 >/dev/null; then
		scripts/vm/run --module "$d/kmod/coopmpi.ko" -- tests/diag/run.sh abi 99 ||
			rc=1
	else
		echo "diag-vm: cannot build a module with ABI 99"
		rc=1
	fi
	rm -rf "$d"
	return $rc
}
stage_install() { tests/install/run.sh; }
stage_dkms() { scripts/dkms-check.sh; }
stage_deb() {
	local out rc
	out=$(mktemp -d)
	scripts/packaging/make-deb.sh "$out"
	rc=$?
	rm -rf "$out"
	return $rc
}
stage_packages_vm() { scripts/packaging/test-debs.sh; }
# benchmarks are not tests: each program once on tiny sizes
stage_bench_smoke() { bench/run-suite.sh smoke; }

# --- running them -----------------------------------------------------------

passed=0
failed=0
failed_stages=()
summary=()

# Adds the "Checks: N, Failures: F, Errors: E" lines of a Check log and
# the "N passed, M failed" closing lines of the script-driven stages.
count_checks() {
	local n f e
	while read -r n f e; do
		passed=$((passed + n - f - e))
		failed=$((failed + f + e))
	done < <(sed -n -e 's/.*Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p' \
		-e 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2 0/p' "$1")
}

run_stage() {
	local name=$1 log=$log_dir/$1.log start=$SECONDS rc result
	printf '\n==== %s ====\n' "$name"
	"stage_${name//-/_}" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	count_checks "$log"
	stage_line "$name" "$rc" "$start"
	result=ok
	if [ "$rc" -ne 0 ]; then
		result="FAILED rc=$rc"
		failed_stages+=("$name")
	fi
	summary+=("$(printf '%-26s %-6s %-13s %6d' "$name" "$(stage_tier "$name")" \
		"$result" $((SECONDS - start)))")
}

print_summary() {
	local line
	printf '\n==== summary ====\n'
	printf '%-26s %-6s %-13s %6s\n' stage tier result seconds
	for line in "${summary[@]}"; do
		echo "$line"
	done
	printf '%-26s %-6s %-13s %6d\n' total '' '' "$SECONDS"
	if [ ${#failed_stages[@]} -ne 0 ]; then
		echo "failed stages: ${failed_stages[*]} (logs in $log_dir)"
		failed=$((failed + ${#failed_stages[@]}))
	fi
	echo "check: $passed passed, $failed failed"
}

selected=()
case ${1:-} in
--list)
	[ $# -eq 1 ] || usage
	awk 'NF' <<<"$STAGES"
	exit 0
	;;
--full)
	[ $# -eq 1 ] || usage
	mapfile -t selected < <(stage_names)
	;;
'')
	mapfile -t selected < <(awk '$2 == "quick" { print $1 }' <<<"$STAGES")
	;;
-*) usage ;;
*)
	for name in "$@"; do
		if [ -z "$(stage_tier "$name")" ]; then
			echo "check: no stage '$name' (scripts/check.sh --list)" >&2
			exit 2
		fi
	done
	selected=("$@")
	;;
esac

log_dir=$(mktemp -d /tmp/coopmpi-check.XXXXXX)
SECONDS=0
for name in "${selected[@]}"; do
	run_stage "$name"
done
print_summary
[ ${#failed_stages[@]} -eq 0 ]
