#!/usr/bin/env bash
# Runs every test stage of `make check` and totals the Check results.
# A stage fails on a non-zero exit; the run fails if any stage failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/stage.sh

log_dir=$(mktemp -d /tmp/coopmpi-check.XXXXXX)
passed=0
failed=0
failed_stages=()

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

stage() {
	local name=$1
	shift
	local log="$log_dir/$name.log"
	printf '\n==== %s ====\n' "$name"
	local start=$SECONDS
	"$@" 2>&1 | tee "$log"
	local rc=${PIPESTATUS[0]}
	count_checks "$log"
	stage_line "$name" "$rc" "$start"
	[ "$rc" -eq 0 ] || failed_stages+=("$name")
}

module_builds_warning_free() {
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

vm() {
	scripts/vm/run --module kmod/coopmpi.ko -- "$@"
}

# The library and its tests once more with AddressSanitizer and UBSan, in
# a copy so the normal build stays as it is: an out-of-bounds access, a
# use after free, a leak at exit or undefined behaviour aborts the rank,
# and so fails its test.
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

lib_sanitized() {
	local dir=$log_dir/sanitized
	sanitized_copy "$dir" "-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined" ||
		return 1
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		COOP_PROVIDER=shm "$dir/tests/lib/test_lib"
}

# The same with ThreadSanitizer: a data race between two threads of a rank
# ends the rank (halt_on_error), and so fails its test.  First the threads
# case (application threads, and progress threads, on one context), then
# every other case with a progress thread next to the rank's own
# (COOP_PROGRESS=thread-sleep; LIB_TSAN_PROGRESS=manual: as in lib-native,
# where only a few tests have a second thread).  The reports go to files
# (log_path: some tests redirect a rank's stderr), printed after each case;
# one fails the stage even if its test passed.  -Wno-tsan: GCC warns that
# TSan does not model atomic_thread_fence; the ring's fences only order
# the doorbell's arming against a producer's look at it (who rings), no
# data is handed over through them.  Suppressions: tests/lib/tsan.supp,
# for third-party code only.  TSan sees what this process's threads do,
# not the copies of another rank or of the kernel (process_vm_readv).
lib_tsan() {
	local dir=$log_dir/tsan
	local opts="halt_on_error=1 second_deadlock_stack=1"
	local rc=0 c progress cases
	opts+=" suppressions=$PWD/tests/lib/tsan.supp log_path=$dir/report"
	sanitized_copy "$dir" "-O1 -g -fno-omit-frame-pointer -fsanitize=thread -Wno-tsan" ||
		return 1
	cases=$(sed -n 's/.*tcase_create("\([^"]*\)").*/\1/p' tests/lib/t_*.c |
		grep -vx threads)
	for c in threads $cases; do
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

stage module-w1 module_builds_warning_free
# lib/'s layers call only downward (lib/README.md); the checker's own test
# shows that it catches an upward call
stage layer-check make -s -C lib layer-check
stage layer-check-test tests/layercheck/run.sh
stage lib-native env COOP_PROVIDER=shm tests/lib/test_lib
stage lib-sanitized lib_sanitized
stage lib-tsan lib_tsan
# the whole suite with a polling progress thread per rank (lib-tsan ran it
# with thread-sleep); in the VM below on the driver with thread-sleep
stage lib-native-thread env COOP_PROVIDER=shm COOP_PROGRESS=thread \
	tests/lib/test_lib
stage kmod-vm vm tests/kmod/test_kmod
# dma=auto above ran the DMA suite on the soft engine; now the dmaengine
# path (test provider module) and dma=off.
stage kmod-dma-vm scripts/vm-dma-tests.sh hw off
# the HCA-loopback engine over Soft-RoCE, under both providers
stage hca-vm scripts/vm-hca-tests.sh
# on the driver with manual progress: debug-lib below, on the debug kernel
stage lib-vm-progress vm env COOP_PROVIDER=kmod COOP_PROGRESS=thread-sleep \
	tests/lib/test_lib
# the driver's suite (fuzz test included), its DMA suite on the dmaengine
# path and the library suite on the driver once more, on the debug kernel
# (KASAN, lockdep, kmemleak, KFENCE, UBSAN...: scripts/vm/debug-kernel,
# built once and cached); any report fails the stage
stage debug-vm scripts/vm-debug-tests.sh
# the UCX transport under unmodified MPI programs (MPICH, Open MPI),
# natively (shm provider) and in the VM (the driver: kmod provider)
stage ucx tests/ucx/run.sh
stage ucx-vm vm env COOP_IN_VM=1 tests/ucx/run.sh
# MPICH's own test suite (pt2pt, coll, rma; tests/ucx/mpich-suite.list)
# under both launchers, then a part of it in the VM on the driver: the
# emulator is ~20x slower, large_message needs more memory than the VM has
stage ucx-mpich-suite tests/ucx/mpich-suite.sh
# its point-to-point programs with coop alone (every message on the rings)
stage ucx-mpich-suite-coop-only tests/ucx/mpich-suite.sh --tls coop,self \
	--only '^pt2pt/'
# Debian's python3-mpi4py (Open MPI): its benchmarks and a test suite of
# mpi4py programs (tests/ucx/mpi4py_suite.py) through coop
stage ucx-mpi4py tests/ucx/mpi4py-suite.sh
# Open MPI's pml ucx path (scripts/coop-ucx-env -p ucx) stays covered now
# that ob1 + btl uct is the wrapper's default for Open MPI
stage ucx-mpich-suite-pml-ucx env COOP_OMPI_PML=ucx \
	tests/ucx/mpich-suite.sh --mpi openmpi
stage ucx-mpi4py-pml-ucx env COOP_OMPI_PML=ucx tests/ucx/mpi4py-suite.sh
mpich_suite_vm_subset='^(pt2pt/(sendrecv2|anyall|bottom|eagerdt|mprobe|manylmt|huge_anysrc|huge_ssend|huge_dupcomm|dtype_send|large_tag|rcancel)|coll/(iallred|coll7|alltoallw_zeros)|rma/(test1|transpose1|put_base|manyget|get_struct|rget_testall))$'
stage ucx-mpich-suite-vm vm env COOP_SUITE_TIMEOUT=120 \
	tests/ucx/mpich-suite.sh --only "$mpich_suite_vm_subset"
# UCX's own gtest (built once from Debian's source, cached): coop's UCT
# tests and UCP's tag tests over posix,coop,self
stage ucx-gtest tests/ucx/gtest.sh
stage dkms scripts/dkms-check.sh
# benchmarks are not tests: each program once on tiny sizes
stage bench-smoke bench/run-suite.sh smoke

printf '\n==== summary ====\n'
if [ ${#failed_stages[@]} -ne 0 ]; then
	echo "failed stages: ${failed_stages[*]} (logs in $log_dir)"
	failed=$((failed + ${#failed_stages[@]}))
fi
echo "check: $passed passed, $failed failed"
[ ${#failed_stages[@]} -eq 0 ]
