#!/bin/bash
# tests/ucx/mpich-suite.sh - MPICH's own test suite (test/mpi of Debian's
# mpich source: the pt2pt, coll, rma and comm programs named in
# tests/ucx/mpich-suite.list) through the UCX transport coop, under
# mpirun.mpich and mpirun.openmpi (scripts/coopmpi-run).  A program passes
# when it exits 0 and prints " No Errors" within its timeout.  Each run
# prints ok/FAIL; the last line is "N passed, M failed"; exit status 1 when
# any failed.
#
#   tests/ucx/mpich-suite.sh [OPTIONS]
#     --baseline      without coop, to tell failures that coop causes from
#                     the suite's own: MPICH with UCX_TLS=self,posix,cma;
#                     Open MPI's own default (ob1, vader with CMA) - with
#                     --tls or COOP_OMPI_PML=ucx its pml ucx (the same
#                     --mca options) and UCX_TLS=self,posix,cma, as the
#                     coop runs then use
#     --mpi NAME      mpich or openmpi only (default: both)
#     --tls TLS       UCX_TLS for the coop runs (scripts/coopmpi-run -t;
#                     default self,posix,coop; coop,self: coop alone); Open
#                     MPI then runs its pml ucx, else the wrapper's default
#                     (ob1, vader, btl uct reading the rendezvous via coop)
#     --only REGEX    only the programs whose dir/name matches
#     --subset FILE   only the programs FILE names (first word of each
#                     line; # starts a comment), each of which must be
#                     in the list; tests/ucx/mpich-quick.list is make
#                     check's
#     --all           also run the programs the list excludes
#     --logs DIR      keep every run's output in DIR
#     --nodes DIR     on the simulated nodes of DIR (tests/nodes/sim-nodes):
#                     launched from node0 through DIR/ssh, the ranks
#                     spread over node0 and node1 (4 ranks: 2 on each)
#     --candidates    print a fresh list from the suite's testlists (to
#                     update mpich-suite.list) and exit
#
# The source comes from scripts/deb-src.sh (apt-get source, cached in
# ${COOP_CACHE:-/var/cache/coopmpi}/mpich-<version>); the suite is configured
# and built once per MPI in <that>-build-<mpicc>-<MPI version>-<hash of the
# configure options>, only the listed programs are compiled (make keeps them).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
root=$PWD

list=tests/ucx/mpich-suite.list
default_timeout=${COOP_TEST_SUITE_TIMEOUT:-20}
mode=coop mpis=(mpich openmpi) only='' subset='' all=0 logs='' candidates=0 tls=()
nodes=
while (($#)); do
	case $1 in
	--baseline) mode=baseline ;;
	--mpi) mpis=("${2:?--mpi needs mpich or openmpi}"); shift ;;
	--tls) tls=(-t "${2:?--tls needs a UCX_TLS value}"); shift ;;
	--only) only=${2:?--only needs a regex}; shift ;;
	--subset) subset=${2:?--subset needs a file}; shift ;;
	--all) all=1 ;;
	--logs) logs=${2:?--logs needs a directory}; shift ;;
	--nodes) nodes=$(realpath "${2:?--nodes needs a directory}"); shift ;;
	--candidates) candidates=1 ;;
	*) sed -n '2,/^set -uo/{/^set/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2 ;;
	esac
	shift
done
for mpi in "${mpis[@]}"; do
	[[ $mpi == mpich || $mpi == openmpi ]] || { echo "mpich-suite: unknown MPI $mpi" >&2; exit 2; }
done
# Open MPI's pml through scripts/coopmpi-run: COOP_OMPI_PML, else ucx with
# --tls (-t), else ob1 (vader + btl uct)
ompi_pml=${COOP_OMPI_PML:-ob1}
[[ -z ${COOP_OMPI_PML:-} && ${#tls[@]} -gt 0 ]] && ompi_pml=ucx

src=$(scripts/deb-src.sh libmpich-dev) || exit 1
suite=$src/test/mpi
dirs=(pt2pt coll rma comm)

# --- the testlists: one candidate line per program -------------------------
# np: the smallest of the program's entries from 2 to 4 ranks (without
# env=, which are MPICH-internal variants), else 1, else 4 when the testlist
# only has more ranks ("capped at 4").  Arguments from the chosen entry.
candidates() {
	local d
	for d in "${dirs[@]}"; do
		awk -v dir="$d" '
		function add(name, np, args, env, large) {
			if (!(name in seen)) { seen[name] = 1; order[++n] = name }
			nps[name] = nps[name] (nps[name] == "" ? "" : ",") np
			if (large) big[name] = 1
			if (env) return
			if (np >= 2 && np <= 4) k = 0; else if (np == 1) k = 1; else k = 2
			if (!(name in best) || k < bestk[name] ||
			    (k == bestk[name] && np < best[name])) {
				best[name] = np; bestk[name] = k; bargs[name] = args
			}
		}
		/^[[:space:]]*(#|$)/ { next }
		{
			large = sub(/^@largetest@/, "")
			if ($0 ~ /^@/) next
			args = ""; env = 0
			for (i = 3; i <= NF; i++) {
				if ($i ~ /^arg=/) args = args " " substr($i, 5)
				else if ($i ~ /^env=/) env = 1
				else if ($i ~ /^timeLimit=/) tl[$1] = substr($i, 11)
				else if ($i ~ /^xfail=/) xf[$1] = 1
				else if ($i ~ /^mem=/) mem[$1] = substr($i, 5)
			}
			add($1, $2, args, env, large)
		}
		END {
			for (i = 1; i <= n; i++) {
				name = order[i]
				if (!(name in best)) { best[name] = 4; bargs[name] = "" }
				np = best[name] > 4 ? 4 : best[name]
				note = "testlist np " nps[name]
				if (name in tl) note = note ", timeLimit " tl[name]
				if (name in xf) note = note ", xfail"
				if (name in big) note = note ", largetest"
				if (name in mem) note = note ", mem " mem[name] " GB"
				printf "%-40s %d run run%s  # %s\n", dir "/" name, np, bargs[name], note
			}
		}' "$suite/$d/testlist.in"
	done
}
if ((candidates)); then
	candidates
	exit 0
fi

# --- the list ---------------------------------------------------------------
# "dir/name np mpich openmpi [timeout=S] [args...]  # note": mpich/openmpi
# are "run" or the tag of the reason it is excluded under that MPI.
declare -a L_name L_np L_st_mpich L_st_openmpi L_timeout L_args
while read -r line; do
	line=${line%%#*}
	read -r name np s1 s2 rest <<<"$line"
	[[ -n ${name:-} ]] || continue
	[[ -n ${s2:-} ]] || { echo "mpich-suite: bad line in $list: $line" >&2; exit 2; }
	t=$default_timeout	# a line's timeout= raises it, never lowers it
	if [[ ${rest:-} =~ ^timeout=([0-9]+)[[:space:]]*(.*)$ ]]; then
		((BASH_REMATCH[1] > t)) && t=${BASH_REMATCH[1]}
		rest=${BASH_REMATCH[2]}
	fi
	L_name+=("$name") L_np+=("$np") L_st_mpich+=("$s1") L_st_openmpi+=("$s2")
	L_timeout+=("$t") L_args+=("${rest:-}")
done <"$list"

# --subset FILE: the names it gives, each of them in the list
declare -A in_subset
if [[ -n $subset ]]; then
	[[ -r $subset ]] || { echo "mpich-suite: cannot read $subset" >&2; exit 2; }
	while read -r name _; do
		name=${name%%#*}
		[[ -n $name ]] || continue
		[[ " ${L_name[*]} " == *" $name "* ]] ||
			{ echo "mpich-suite: $subset names $name, which $list has not" >&2; exit 2; }
		in_subset[$name]=1
	done <"$subset"
	((${#in_subset[@]})) || { echo "mpich-suite: $subset names no program" >&2; exit 2; }
fi

# the program whose run shows that coop carried the traffic (built always)
probe=pt2pt/huge_ssend

# chosen NAME: the program is one that --only and --subset select
chosen() {
	[[ -z $only || $1 =~ $only ]] && [[ -z $subset || -n ${in_subset[$1]:-} ]]
}

tmp=$(mktemp -d ${nodes:+-p "$nodes"}) || exit 1	# the nodes see $nodes
trap 'rm -rf "$tmp"' EXIT
[[ -z $logs ]] || mkdir -p "$logs" || exit 1
. tests/ucx/report.sh
copy_count_build "$tmp" || exit 1

# The list accounts for every program of the testlists, and only for them.
candidates | awk '{print $1}' | sort >"$tmp/cand"
printf '%s\n' "${L_name[@]}" | sort >"$tmp/listed"
if cmp -s "$tmp/cand" "$tmp/listed"; then
	ok "$list has one line for each of the $(wc -l <"$tmp/cand") programs of the ${dirs[*]} testlists"
else
	diff "$tmp/cand" "$tmp/listed" | grep '^[<>]' |
		sed 's/^</missing from the list:/;s/^>/not in a testlist (or twice):/' >"$tmp/listdiff"
	nok "$list has one line for each program of the ${dirs[*]} testlists" "$tmp/listdiff"
fi

# --- build (cached per MPI) -------------------------------------------------
conf_opts=(--disable-fortran --disable-cxx --disable-romio --disable-spawn
	--disable-perftest --disable-ft-tests --disable-checkpointing
	--disable-dependency-tracking --enable-threads=single)
# MPI-1 functions removed from Open MPI's mpi.h (still in the library) are
# used by the suite's dtpools; declare them again.
# shellcheck disable=SC2034 # used through the nameref env_ref
conf_env_openmpi=(CPPFLAGS=-DOMPI_OMIT_MPI1_COMPAT_DECLS=0)
# shellcheck disable=SC2034
conf_env_mpich=()

# build MPI: prints the build directory; compiles the programs to run
build() {
	local mpi=$1 mpicc=mpicc.$1 dev ver key bdir i d prog
	dev=libmpich-dev
	[[ $mpi == openmpi ]] && dev=libopenmpi-dev
	ver=$(dpkg-query -W -f='${Version}' $dev 2>/dev/null) || { echo "mpich-suite: $dev not installed" >&2; return 1; }
	local -n env_ref=conf_env_$mpi
	key=$(echo "${conf_opts[*]} ${env_ref[*]}" | sha1sum | cut -c1-12)
	bdir=$src-build-$mpicc-$ver-$key
	# a read-only cache (the VM's view of the host): run what is built
	if [[ ! -w ${bdir%/*} ]]; then
		[[ -f $bdir/.configured ]] || {
			echo "mpich-suite: $bdir not built, and ${bdir%/*} is read-only: run the suite natively once first" >&2
			return 1
		}
		echo "$bdir"
		return 0
	fi
	(
		exec 9>"$bdir.lock"
		flock 9
		if [[ ! -f $bdir/.configured ]]; then
			rm -rf "$bdir"
			mkdir -p "$bdir" || exit 1
			echo "mpich-suite: configuring the suite for $mpicc in $bdir" >&2
			if ! (cd "$bdir" && "$suite/configure" MPICC="$mpicc" "${env_ref[@]}" \
				"${conf_opts[@]}" && make -C util -j2 && make -C dtpools -j2) \
				>"$bdir.log" 2>&1; then
				tail -30 "$bdir.log" >&2
				echo "mpich-suite: configuring the suite for $mpicc failed ($bdir.log)" >&2
				exit 1
			fi
			touch "$bdir/.configured"
		fi
		# the listed programs (or all with --all) that this MPI runs and
		# --only or --subset choose
		for d in "${dirs[@]}"; do
			progs=()
			for i in "${!L_name[@]}"; do
				[[ ${L_name[i]%%/*} == "$d" ]] || continue
				chosen "${L_name[i]}" || [[ ${L_name[i]} == "$probe" ]] || continue
				local -n st=L_st_$mpi
				[[ ${st[i]} == run || $all == 1 ]] || continue
				progs+=("${L_name[i]#*/}")
			done
			((${#progs[@]})) || continue
			make -C "$bdir/$d" -j2 -k "${progs[@]}" >>"$bdir.make.log" 2>&1
		done
		true
	) || return 1
	echo "$bdir"
}

# on_nodes MPI NP [NODES]: the launcher options that spread NP ranks over
# NODES simulated nodes (default 2), filled in order
on_nodes() {
	local per=$(($2 / ${3:-2} + ($2 % ${3:-2} > 0))) hosts
	hosts=node0:$per
	(($2 > per)) && hosts+=,node1:$per
	if [[ $1 == mpich ]]; then
		echo "-launcher ssh -launcher-exec $nodes/ssh -hosts $hosts"
	else
		echo "--mca plm_rsh_agent $nodes/ssh --host $hosts"
	fi
}

# launch MPI NP [NODES] [WORD...]: the launcher command line for this mode
# in ${cmd[@]}; with --nodes a command run on node0 (the WORDs before the
# launcher: e.g. env VAR=VALUE, as the agent passes no environment)
launch() {
	local mpi=$1 np=$2 where=${3:-2}
	shift $(($# < 3 ? $# : 3))
	launch_here "$mpi" "$np"
	[[ -n $nodes ]] || return 0
	local opts
	read -ra opts <<<"$(on_nodes "$mpi" "$np" "$where")"
	cmd=("$nodes/ssh" node0 cd "$tmp" "&&" "$@" "${cmd[@]}" "${opts[@]}")
}

launch_here() {
	local mpi=$1 np=$2
	if [[ $mode == coop && $mpi == mpich ]]; then
		cmd=("$root/scripts/coopmpi-run" "${tls[@]}" mpirun.mpich -np "$np")
	elif [[ $mode == coop ]]; then
		cmd=("$root/scripts/coopmpi-run" "${tls[@]}" mpirun.openmpi --allow-run-as-root
			--oversubscribe -np "$np")
	elif [[ $mpi == mpich ]]; then
		cmd=(mpirun.mpich -genv UCX_TLS "self,posix,cma" -np "$np")
	elif [[ $ompi_pml == ucx ]]; then
		cmd=(mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ucx
			--mca pml_ucx_tls any --mca pml_ucx_devices any
			-x "UCX_TLS=self,posix,cma" -np "$np")
	else
		cmd=(mpirun.openmpi --allow-run-as-root --oversubscribe -np "$np")
	fi
}

# --- run --------------------------------------------------------------------
# libcoopmpi's choice: the driver where it is loaded (the VM), else shm
provider=shm
[[ -e /dev/coopmpi ]] && provider=kmod
declare -A excluded
start=$SECONDS
for mpi in "${mpis[@]}"; do
	[[ $mode == baseline ]] && export UCX_TLS=self,posix,cma
	mpi_start=$SECONDS
	if ! bdir=$(build "$mpi"); then
		nok "$mpi: configure and build the suite"
		continue
	fi
	declare -n st=L_st_$mpi
	n_run=0
	for i in "${!L_name[@]}"; do
		name=${L_name[i]}
		chosen "$name" || continue
		if [[ ${st[i]} != run ]]; then
			excluded[$mpi:${st[i]}]=$((${excluded[$mpi:${st[i]}]:-0} + 1))
			((all)) || continue
		fi
		n_run=$((n_run + 1))
		np=${L_np[i]}
		log=$tmp/log
		[[ -z $logs ]] || log=$logs/$mpi-${name//\//-}.log
		what="$mpi: $name (np $np${L_args[i]:+: ${L_args[i]}})"
		prog=$bdir/$name
		if [[ ! -x $prog ]]; then
			grep -E "(error|undefined).*" "$bdir.make.log" | grep -F "/${name#*/}." | head -5 >"$log"
			nok "$what: not built (see $bdir.make.log)" "$log"
			continue
		fi
		launch "$mpi" "$np"
		t0=$EPOCHREALTIME
		# shellcheck disable=SC2086 # the arguments are words
		(cd "$tmp" && timeout -k 5 "${L_timeout[i]}" "${cmd[@]}" \
			"$prog" ${L_args[i]}) </dev/null >"$log" 2>&1
		rc=$?
		# across nodes: report.sh, finalize_hang
		[[ -n $nodes ]] && finalize_hang "$what" "$mpi" "$rc" "$log" '^ *No Errors' &&
			rc=0
		t=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
		if ((rc == 0)) && grep -q '^ *No Errors' "$log"; then
			ok "$what ${t}s"
		elif ((rc == 124 || rc == 137)); then
			nok "$what: timeout ${L_timeout[i]}s" "$log"
		else
			nok "$what: exit $rc ${t}s" "$log"
		fi
	done
	ex=
	for k in "${!excluded[@]}"; do
		[[ $k == "$mpi:"* ]] && ex+=" ${k#*:} ${excluded[$k]},"
	done
	echo "# $mpi: $n_run programs run in $((SECONDS - mpi_start))s; excluded:${ex%,}"

	# coop carried traffic: the tag protocol of a two-rank program has a
	# coop/memory lane (rendezvous); under Open MPI's default path through
	# the wrapper (ob1 + btl uct, no UCX lanes) coop copied its 16 MiB
	if [[ $mode == coop ]]; then
		if [[ $mpi == mpich ]]; then
			info=(-genv UCX_LOG_LEVEL info -genv COOP_VERBOSE 1)
		else
			info=(-x UCX_LOG_LEVEL=info -x COOP_VERBOSE=1)
		fi
		ob1=0
		[[ $mpi == openmpi && $ompi_pml == ob1 ]] && ob1=1
		before=$(copy_bytes)
		preload=()
		((ob1)) && preload=(env "LD_PRELOAD=$tmp/copy_count.so")
		launch "$mpi" 2 1 "${preload[@]}"	# on one node
		[[ -z $nodes ]] || preload=()
		(cd "$tmp" && timeout -k 5 60 "${preload[@]}" "${cmd[@]}" "${info[@]}" \
			"$bdir/$probe") </dev/null >"$tmp/info" 2>&1
		copied=$(coop_copied "$tmp/info" "$before")
		if ((ob1)); then
			what="$mpi: $probe's 16 MiB copied by coop (ob1 + btl uct) on the $provider provider"
			lane() { ((copied >= 16 << 20)); }
		else
			what="$mpi: $probe's rendezvous lane is coop (UCX_LOG_LEVEL=info ep_cfg) on the $provider provider"
			lane() { grep -qE 'ep_cfg\[[0-9]+\]: tag\([^)]*coop/memory' "$tmp/info"; }
		fi
		if grep -q '^ *No Errors' "$tmp/info" && lane &&
			grep -q "coopmpi\[[0-9]*\]: provider $provider" "$tmp/info"; then
			ok "$what"
		else
			nok "$what" "$tmp/info"
		fi
	fi
done
echo "# $mode run: $((SECONDS - start))s"
echo "$pass passed, $fail failed"
((fail == 0))
