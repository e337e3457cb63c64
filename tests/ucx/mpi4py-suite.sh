#!/bin/bash
# tests/ucx/mpi4py-suite.sh - Debian's python3-mpi4py (built for Open MPI)
# through the UCX transport coop: mpi4py's own test suite (test/runtests.py
# of the mpi4py source package) with 2 ranks, and the installed package's
# mpi4py.bench (helloworld; ringtest with 1 B .. 4 MiB messages, data
# checked by rank 0).  Each check prints ok/FAIL; the last line is
# "N passed, M failed"; exit status 1 when any failed.
#
#   tests/ucx/mpi4py-suite.sh [--baseline] [--logs DIR]
#     --baseline   without coop (UCX_TLS=self,posix,cma, same --mca options)
#     --logs DIR   keep the outputs in DIR
#
# The suite passes when mpirun exits 0 within the timeout and both ranks end
# with unittest's "OK" (skips allowed) and none reports FAILED or ERROR.
# Excluded (-e): spawn and dynproc (MPI_Comm_spawn / connect-accept start
# more processes than the 2 ranks; slow when oversubscribed).  The source
# comes from scripts/deb-src.sh python3-mpi4py (apt-get source, cached in
# ${COOP_CACHE:-/var/cache/coopmpi}/mpi4py-<version>); MPI4PY_SRC=DIR uses an
# unpacked mpi4py source of the installed version instead.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

mode=coop logs=
while (($#)); do
	case $1 in
	--baseline) mode=baseline ;;
	--logs) logs=${2:?--logs needs a directory}; shift ;;
	*) sed -n '2,/^set -uo/{/^set/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2 ;;
	esac
	shift
done

# Debian's interpreter: python3-mpi4py is installed for it, whatever
# python3 comes first in PATH.
py=/usr/bin/python3
timeout=${COOP_MPI4PY_TIMEOUT:-300}
exclude=(-e spawn -e dynproc)

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
[[ -z $logs ]] || mkdir -p "$logs" || exit 1
out() { if [[ -n $logs ]]; then echo "$logs/$1.log"; else echo "$tmp/$1.log"; fi; }
pass=0 fail=0
ok() { echo "ok   - $1"; pass=$((pass + 1)); }
nok() {
	echo "FAIL - $1"
	fail=$((fail + 1))
	[[ -z ${2:-} ]] || sed 's/^/     | /' "$2" | tail -30
}

if [[ $mode == coop ]]; then
	launch=(scripts/coop-ucx-env mpirun.openmpi --allow-run-as-root --oversubscribe -np 2)
else
	export UCX_TLS=self,posix,cma
	launch=(mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ucx
		--mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS -np 2)
fi

if ! $py -c 'import mpi4py.MPI' >"$tmp/import" 2>&1; then
	nok "python3-mpi4py imports ($py)" "$tmp/import"
	echo "$pass passed, $fail failed"
	exit 1
fi

# 1. the installed package's benchmarks, UCX's lane choice logged
log=$(out helloworld)
timeout -k 5 60 "${launch[@]}" $py -m mpi4py.bench helloworld </dev/null >"$log" 2>&1
if [[ $? == 0 && $(grep -c 'Hello, World! I am process [01] of 2' "$log") == 2 ]]; then
	ok "mpi4py.bench helloworld (2 ranks)"
else
	nok "mpi4py.bench helloworld (2 ranks)" "$log"
fi
for size in 1 65536 4194304; do
	log=$(out ringtest-$size)
	if timeout -k 5 60 "${launch[@]}" -x UCX_LOG_LEVEL=info \
		$py -m mpi4py.bench ringtest -n $size -l 50 -s 5 </dev/null >"$log" 2>&1 &&
		grep -q "time for 50 loops.*2 processes, $size bytes" "$log"; then
		ok "mpi4py.bench ringtest $size B x 50 (data checked)"
	else
		nok "mpi4py.bench ringtest $size B x 50 (data checked)" "$log"
	fi
done
if [[ $mode == coop ]]; then
	if grep -qE 'ep_cfg\[[0-9]+\]: tag\([^)]*coop/memory' "$log"; then
		ok "the tag protocol's rendezvous lane is coop (UCX_LOG_LEVEL=info ep_cfg)"
	else
		nok "the tag protocol's rendezvous lane is coop (UCX_LOG_LEVEL=info ep_cfg)" "$log"
	fi
fi

# 2. mpi4py's test suite
src=${MPI4PY_SRC:-}
if [[ -z $src ]] && ! src=$(scripts/deb-src.sh python3-mpi4py 2>"$tmp/src"); then
	nok "mpi4py's test suite: get the mpi4py source (scripts/deb-src.sh python3-mpi4py; or set MPI4PY_SRC)" "$tmp/src"
elif [[ ! -f $src/test/runtests.py ]]; then
	echo "$src/test/runtests.py not found" >"$tmp/src"
	nok "mpi4py's test suite: $src/test/runtests.py" "$tmp/src"
else
	log=$(out runtests)
	t0=$SECONDS
	(cd "$tmp" && timeout -k 5 "$timeout" "${launch[@]}" $py "$src/test/runtests.py" \
		--no-builddir "${exclude[@]}") </dev/null >"$log" 2>&1
	rc=$?
	what="mpi4py's test suite, 2 ranks, without ${exclude[*]}"
	if ((rc == 124 || rc == 137)); then
		nok "$what: timeout ${timeout}s" "$log"
	elif ((rc == 0)) && (($(grep -cE '^OK( \(.*\))?$' "$log") == 2)) &&
		! grep -qE '^(FAILED|ERROR:|FAIL:)' "$log"; then
		ran=$(grep -oE '^Ran [0-9]+ tests' "$log" | head -1)
		skipped=$(grep -oE 'skipped=[0-9]+' "$log" | head -1)
		ok "$what: ${ran:-?} per rank${skipped:+, $skipped} ($((SECONDS - t0))s)"
	else
		nok "$what: exit $rc ($((SECONDS - t0))s)" "$log"
	fi
fi

echo "$pass passed, $fail failed"
((fail == 0))
