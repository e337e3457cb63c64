#!/bin/bash
# tests/diag/run.sh - what users are told when coopmpi cannot do its job:
# each failure names its cause and its fix.
#
#   tests/diag/run.sh            natively (stage diag): the module absent
#                                (fallback note, COOP_WARN_FALLBACK=0,
#                                COOP_PROVIDER=kmod, coop_info --status),
#                                coop_info --version / -c, and the wrapper:
#                                UCX_TLS without coop, plain mpirun and
#                                mpiexec through alternatives, srun-like
#                                launchers, --export=NONE
#   tests/diag/run.sh perm       in the VM with the module (stage diag-vm):
#                                /dev/coopmpi 0600 root, used by nobody;
#                                too many endpoints for a user
#   tests/diag/run.sh abi N      in the VM with a module built with ABI N
#                                (stage diag-vm): the mismatch, both versions
# One "ok"/"FAIL" line per check, then "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
tmp=$(mktemp -d) || exit 1
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
. tests/ucx/report.sh
version=$(sed -n 's/^#define COOPMPI_VERSION[[:space:]]*"\(.*\)"/\1/p' include/coopmpi_uapi.h)
abi=$(sed -n 's/^#define COOPMPI_ABI_VERSION[[:space:]]*\([0-9]*\)/\1/p' include/coopmpi_uapi.h)

# run2 LOG [VAR=VALUE...] : two ranks of tests/install/hello (4 MiB checked)
run2() {
	local log=$1
	shift
	env "$@" scripts/cooprun -n 2 -t 60 "$tmp/hello" >"$log" 2>&1
}
cc -O2 -Wall -Werror -Iinclude tests/install/hello.c -Llib -lcoopmpi \
	-Wl,-rpath,"$PWD/lib" -o "$tmp/hello" || { echo "cannot build hello"; exit 1; }

native() {
	run2 "$tmp/absent"
	has "$tmp/absent" "^coopmpi\[0\]: note: /dev/coopmpi is absent \(the coopmpi module is not loaded\); using the shm provider instead; fix: load it with .sudo modprobe coopmpi." \
		"module absent: one note from rank 0 with the fix"
	if (($(grep -c 'note:' "$tmp/absent") == 1)) && grep -q 'arrived intact' "$tmp/absent"; then
		ok "module absent: only one line, and the job runs on shm"
	else
		nok "module absent: only one line, and the job runs on shm" "$tmp/absent"
	fi
	run2 "$tmp/quiet" COOP_WARN_FALLBACK=0
	hasnt "$tmp/quiet" 'coopmpi\[' "COOP_WARN_FALLBACK=0 silences it"
	run2 "$tmp/forced" COOP_PROVIDER=kmod
	has "$tmp/forced" "error: COOP_PROVIDER=kmod, but /dev/coopmpi is absent .*; fix: load it" \
		"COOP_PROVIDER=kmod without the module: an error naming cause and fix"
	lib/coop_info --status >"$tmp/status" 2>&1
	st=$?
	has "$tmp/status" '^provider:   shm, because /dev/coopmpi is absent' \
		"coop_info --status: shm, and why"
	if ((st == 1)); then ok "coop_info --status: exit status 1 without the driver"
	else nok "coop_info --status: exit status 1 without the driver (got $st)" "$tmp/status"; fi
	lib/coop_info --version >"$tmp/version" 2>&1
	has "$tmp/version" "^libcoopmpi $version \(ABI $abi\)$" "coop_info --version: the library's"
	has "$tmp/version" '^coopmpi.ko not loaded$' "coop_info --version: no module"
	COOP_CHUNK=2m lib/coop_info -c >"$tmp/c" 2>&1
	has "$tmp/c" '^COOP_CHUNK +2097152 +4m +environment$' \
		"coop_info -c: a setting from the environment, with its default"
	has "$tmp/c" '^COOP_SPIN +20000 +20000 +default$' "coop_info -c: a default"
	wrapper
}

wrapper() {
	local run=scripts/coopmpi-run
	if ! mpicc.mpich -O2 tests/ucx/mpi_check.c -o "$tmp/check.mpich" ||
		! mpicc.openmpi -O2 tests/ucx/mpi_check.c -o "$tmp/check.openmpi"; then
		nok "cannot build tests/ucx/mpi_check.c"
		return
	fi
	UCX_TLS=rc,sm,self $run mpirun.mpich -np 2 "$tmp/check.mpich" >"$tmp/tls" 2>&1
	st=$?
	has "$tmp/tls" 'UCX_TLS=rc,sm,self \(UCX_TLS in the environment\) leaves out coop.*-t rc,sm,self,coop' \
		"wrapper: UCX_TLS=rc,sm,self is refused, naming the fix"
	if ((st == 2)) && ! grep -q 'mpi_check' "$tmp/tls"; then ok "wrapper: ... and nothing ran"
	else nok "wrapper: ... and nothing ran (status $st)" "$tmp/tls"; fi
	$run -t '^coop' mpirun.mpich -np 2 "$tmp/check.mpich" >"$tmp/tls2" 2>&1
	has "$tmp/tls2" 'leaves out coop' "wrapper: -t ^coop is refused too"
	UCX_TLS=all $run -v mpirun.mpich -np 2 -genv UCX_LOG_LEVEL info \
		"$tmp/check.mpich" >"$tmp/all" 2>&1
	has "$tmp/all" 'ep_cfg\[[0-9]+\]: tag\([^)]*coop/memory' "wrapper: UCX_TLS=all keeps coop"
	# plain mpirun and mpiexec: Debian's alternatives, and one pointing
	# to MPICH (a directory of our own first in PATH)
	mkdir "$tmp/bin"
	ln -s "$(readlink -f "$(command -v mpirun.mpich)")" "$tmp/bin/mpirun"
	ln -s "$(command -v hydra_pmi_proxy)" "$tmp/bin/"	# beside mpirun, as in /usr/bin
	PATH=$tmp/bin:$PATH $run -v mpirun -np 2 -genv UCX_LOG_LEVEL info \
		"$tmp/check.mpich" >"$tmp/alt.mpich" 2>&1
	has "$tmp/alt.mpich" "^coopmpi-run: MPICH \(mpirun -> .*mpiexec.hydra\)" \
		"wrapper: mpirun whose alternative is MPICH is run as MPICH"
	has "$tmp/alt.mpich" 'ep_cfg\[[0-9]+\]: tag\([^)]*coop/memory' \
		"wrapper: ... and its rendezvous went through coop"
	for l in mpirun mpiexec; do
		case $(readlink -f "$(command -v $l)") in
		*orterun | *prterun) ;;
		*) continue ;;
		esac
		$run -v $l --allow-run-as-root --oversubscribe -np 2 "$tmp/check.openmpi" \
			>"$tmp/alt.$l" 2>&1
		has "$tmp/alt.$l" "^coopmpi-run: Open MPI \($l -> .*\)" \
			"wrapper: $l (Debian's alternative: Open MPI) is run as Open MPI"
		if grep -q 'Open MPI: pml ob1 + btl self,vader,uct,tcp' "$tmp/alt.$l" &&
			grep -q 'mpi_check: ok' "$tmp/alt.$l"; then
			ok "wrapper: ... with ob1 + btl uct, and mpi_check passes"
		else
			nok "wrapper: ... with ob1 + btl uct, and mpi_check passes" "$tmp/alt.$l"
		fi
	done
	# a launcher it does not know (srun's path): everything in the environment
	printf '#!/bin/sh\nexec "$@"\n' >"$tmp/bin/launch"
	chmod +x "$tmp/bin/launch"
	PATH=$tmp/bin:$PATH $run -v launch env >"$tmp/other" 2>&1
	has "$tmp/other" 'launch is neither MPICH.s nor Open MPI.s launcher nor srun' \
		"wrapper: an unknown launcher is named"
	if grep -q '^LD_PRELOAD=.*libuct_coop.so' "$tmp/other" &&
		grep -qE '^UCX_TLS=self,posix,coop,(rc,)?tcp$' "$tmp/other" &&
		grep -q '^OMPI_MCA_btl=self,vader,uct,tcp$' "$tmp/other"; then
		ok "wrapper: ... and gets coopmpi's settings in its environment"
	else
		nok "wrapper: ... and gets coopmpi's settings in its environment" "$tmp/other"
	fi
	ln -s "$tmp/bin/launch" "$tmp/bin/srun"
	PATH=$tmp/bin:$PATH $run srun --export=NONE true >"$tmp/srun" 2>&1
	has "$tmp/srun" 'export=NONE keeps coopmpi.s settings from the ranks' \
		"wrapper: srun --export=NONE is refused"
}

# in the VM: /dev/coopmpi readable by root only, used by nobody
perm() {
	chmod 0600 /dev/coopmpi
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		env -u COOP_PROVIDER scripts/cooprun -n 2 -t 120 "$tmp/hello" >"$tmp/perm" 2>&1
	has "$tmp/perm" "^coopmpi\[0\]: warning: /dev/coopmpi: permission denied \(crw------- root:root; this process runs as uid [0-9]+\); using the shm provider instead; fix: ask the administrator" \
		"device 0600 root, user nobody: a warning naming mode, owner and fix"
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		lib/coop_info --status >"$tmp/perm.status" 2>&1
	has "$tmp/perm.status" '^provider:   shm, because /dev/coopmpi: permission denied' \
		"coop_info --status as nobody: permission denied"
	chmod 0666 /dev/coopmpi
	# one endpoint per user: the second rank's open fails with EMFILE
	old=$(cat /sys/module/coopmpi/parameters/user_max_endpoints)
	echo 1 >/sys/module/coopmpi/parameters/user_max_endpoints
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		scripts/cooprun -n 2 -t 120 "$tmp/hello" >"$tmp/limit" 2>&1
	echo "$old" >/sys/module/coopmpi/parameters/user_max_endpoints
	has "$tmp/limit" 'warning: /dev/coopmpi: too many endpoints \(Too many open files: .*user_max_endpoints\)|coopmpi\[[01]\]:.*too many endpoints' \
		"user_max_endpoints reached: a warning naming the limit"
}

# in the VM with a module of another ABI
abi_mismatch() {
	local other=$1
	run2 "$tmp/abi"
	has "$tmp/abi" "^coopmpi\[0\]: warning: ABI mismatch: coopmpi.ko $version speaks ABI $other, this libcoopmpi $version speaks ABI $abi; using the shm provider instead; fix: install the module and the library of one release" \
		"module of ABI $other: a warning with both versions and the fix"
	lib/coop_info --version >"$tmp/abi.version" 2>&1
	has "$tmp/abi.version" "^coopmpi.ko $version \(ABI $other\)$" \
		"coop_info --version: the module's ABI"
}

case ${1:-} in
'') native ;;
perm) perm ;;
abi) abi_mismatch "${2:?abi needs the ABI of the module}" ;;
*) sed -n '2,/^set -uo/{/^set/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2 ;;
esac
echo "$pass passed, $fail failed"
((fail == 0))
