# tests/ucx/report.sh - sourced by the scripts here (from the repository's
# top): one "ok   - what" or "FAIL - what" line per check, counted in
# pass / fail; a failure shows the last report_tail (default 20) lines of
# its log, indented.
pass=0 fail=0
ok() { echo "ok   - $1"; pass=$((pass + 1)); }
nok() {
	echo "FAIL - $1"
	fail=$((fail + 1))
	[[ -z ${2:-} ]] || sed 's/^/     | /' "$2" | tail -"${report_tail:-20}"
}
# expect NAME LOG COMMAND...: COMMAND succeeds within expect_timeout
# seconds (default 300), its output in LOG
expect() {
	local name=$1 log=$2
	shift 2
	if timeout "${expect_timeout:-300}" "$@" >"$log" 2>&1; then ok "$name"
	else nok "$name" "$log"; fi
}
# finalize_hang NAME MPI RC LOG ERE: the job of MPI timed out (RC 124 or
# 137) after LOG shows ERE, its checked result; says so on a "#" line.
# Across nodes, MPICH 4.0.2 over UCX 1.13.1's tcp hangs in MPI_Finalize in
# some jobs (up to half) once the program is done (a rank closes a tcp
# endpoint whose peer already waits in the PMI barrier and no longer
# progresses; plain mpirun.mpich too - tests/README).  Such a job has
# done and checked its work, and tests/ucx/copy_count.c reported its
# bytes on entering MPI_Finalize: the scripts count it as run (rc=0),
# and every other failure as failed.
finalize_hang() {
	[[ $2 == mpich ]] && (($3 == 124 || $3 == 137)) && grep -qE -- "$5" "$4" ||
		return 1
	echo "# $1: hung in MPI_Finalize after its checks (MPICH over UCX tcp, tests/README)"
}
# has LOG ERE NAME / hasnt LOG ERE NAME: LOG matches / does not
has() { if grep -qE -- "$2" "$1"; then ok "$3"; else nok "$3" "$1"; fi; }
hasnt() { if grep -qE -- "$2" "$1"; then nok "$3" "$1"; else ok "$3"; fi; }

# Open MPI's default path through coop (scripts/coopmpi-run: ob1, vader,
# btl uct) logs no UCX lanes; coop's copies show what it carried.
# copy_count_build DIR: DIR/copy_count.so (tests/ucx/copy_count.c), which
# LD_PRELOAD'ed into the ranks prints the bytes their process_vm_readv/
# writev moved, by calling object (libuct_coop.so: the shm provider's
# copies; mca_btl_vader.so: vader's CMA).
# copy_bytes: the driver's COPY bytes so far (kmod provider, sysfs).
# coop_copied LOG BEFORE: the bytes coop copied in a run: LOG's copy_count
# lines of libuct_coop.so, the driver's bytes since BEFORE (copy_bytes)
# and what went through windows (the ranks' COOP_VERBOSE=1 "copied:"
# lines at finalize: a window's copy makes no system call).
copy_count_build() {
	cc -O2 -Wall -Werror -shared -fPIC tests/ucx/copy_count.c \
		-o "$1/copy_count.so" -ldl
}
copy_bytes() { cat /sys/kernel/coopmpi/copy_bytes 2>/dev/null || echo 0; }
# ob1_check_copied NAME LOG BEFORE: mpi_check ran intact through the
# wrapper's ob1 and coop copied what it must.  mpi_check sends each of
# its sizes 12 times: 6 one way at a time, which ob1 reads from 1 MiB
# through btl uct (1 MiB, 4 MiB + 7, 16 MiB: 6 x 21 MiB that coop must
# read, each byte once), and 6 in exchanges (both ranks send at once),
# which it leaves to vader's CMA under 32 MiB
# (pml_ob1_use_all_rdma_busy_min), as the 64 KiB + 13 always
# (pml_ob1_use_all_rdma_min): coop's copies hold no byte of those
ob1_check_copied() {
	local copied big=$((6 * ((21 << 20) + 7)))
	copied=$(coop_copied "$2" "$3")
	if grep -q 'mpi_check: ok' "$2" && ((copied >= big && copied < big + 65549)); then
		ok "$1: coop read the one-way data from 1 MiB, vader the rest ($copied bytes)"
	else
		nok "$1: coop read the one-way data from 1 MiB, vader the rest ($copied bytes, $big expected)" "$2"
	fi
}
# copied_sum WHAT HOST LOG...: the sum over the ranks' COOP_VERBOSE
# "copied:" lines on HOST (any host: "") of the bytes they copied (WHAT
# bytes) or of those that went through windows (WHAT windows)
copied_sum() {
	local what=$1 host=$2
	shift 2
	awk -v what="$what" -v host="$host" '/^coopmpi\[[0-9]+\]: copied: [0-9]+ bytes in [0-9]+ jobs, [0-9]+ through windows, on [^ ]+$/ &&
		(host == "" || $NF == host) { s += what == "bytes" ? $3 : $(NF - 4) }
		END { printf "%.0f\n", s }' "$@"
}
# window_bytes_on HOST LOG...: the bytes of the ranks on HOST that went
# through windows
window_bytes_on() { copied_sum windows "$@"; }
# window_bytes LOG...: the same, of every rank
window_bytes() { window_bytes_on "" "$@"; }
# copied_by LOG...: the bytes every rank copied
copied_by() { copied_sum bytes "" "$@"; }
coop_copied() {
	local own
	own=$(awk '/^copy_count\[[0-9]+@[^]]*\]: [0-9]+ bytes .* by libuct_coop\.so$/ { s += $2 }
		END { printf "%.0f\n", s }' "$1")
	echo $((own + $(window_bytes "$1") + $(copy_bytes) - $2))
}
