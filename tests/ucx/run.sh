#!/bin/bash
# tests/ucx/run.sh - the UCX transport "coop" (lib/ucx/libuct_coop.so) with
# Debian's UCX, MPICH and Open MPI, on the provider libcoopmpi picks: kmod
# where /dev/coopmpi exists (the VM, stage ucx-vm), else shm (stage ucx).
# Each check prints ok/FAIL; the last line is "N passed, M failed"; exit
# status 1 when any failed.
#
#   tests/ucx/run.sh [--quick]
#     --quick   only the checks that make check runs in the VM (stage
#               ucx-vm-quick): ucx_info and the version refusal, mpi_check
#               under MPICH and both Open MPI paths, put_zcopy by the
#               offload engine, the writer's help with a one-way read,
#               buffers mapped again at the same address,
#               a rank killed under MPICH and Open MPI's
#               default path, nothing left in /dev/shm.  Left out: NetPIPE,
#               coop alone, sleeping ranks, striped and auto puts, domains
#               apart, the kills under pml ucx.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
quick=0
case ${1:-} in
--quick) quick=1 ;;
'') ;;
*) sed -n '2,/^set -uo/{/^set/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2 ;;
esac

env_run=scripts/coopmpi-run
module=lib/ucx/libuct_coop.so
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
. tests/ucx/report.sh
# perf_pair LOG "SERVER_ENV" "CLIENT_ENV" ARGS...: ucx_perftest ARGS as
# server and client through the module, each with its VAR=VALUE words;
# the client's output in LOG (the server's in LOG.srv).  The client
# tries again while the server is not listening yet (seconds, in the
# emulator under load), and the server ends with the pair: one left
# waiting would take the next pair's client.
perf_pair() {
	local log=$1 server_env=$2 client_env=$3 server try
	shift 3
	# shellcheck disable=SC2086 # VAR=VALUE words
	env $server_env UCX_LOG_LEVEL=info timeout 60 "$env_run" \
		ucx_perftest -p 13391 "$@" >"$log.srv" 2>&1 &
	server=$!
	for ((try = 0; try < 30; try++)); do
		sleep 1
		# shellcheck disable=SC2086
		env $client_env UCX_LOG_LEVEL=info timeout 60 "$env_run" \
			ucx_perftest localhost -p 13391 "$@" >"$log" 2>&1
		if ! grep -q 'Connection refused' "$log" ||
			! kill -0 "$server" 2>/dev/null; then
			break
		fi
	done
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
}
shm_files() { (cd /dev/shm && printf '%s\n' coopmpi-*) | grep -v '^coopmpi-\*$' | sort; }

mpicc.mpich -O2 -Wall -Werror tests/ucx/mpi_check.c -o "$tmp/check.mpich" &&
	mpicc.openmpi -O2 -Wall -Werror tests/ucx/mpi_check.c -o "$tmp/check.openmpi" &&
	mpicc.mpich -O2 -Wall -Werror tests/ucx/mpi_kill.c -o "$tmp/kill.mpich" &&
	mpicc.mpich -O2 -Wall -Werror tests/ucx/mpi_realloc.c -o "$tmp/realloc.mpich" &&
	mpicc.openmpi -O2 -Wall -Werror tests/ucx/mpi_realloc.c -o "$tmp/realloc.openmpi" &&
	mpicc.openmpi -O2 -Wall -Werror tests/ucx/mpi_kill.c -o "$tmp/kill.openmpi" &&
	cc -shared -fPIC tests/ucx/version_shim.c -o "$tmp/shim.so" &&
	copy_count_build "$tmp" ||
	{ echo "cannot build the test programs"; exit 1; }
shm_files >"$tmp/shm-before"

# 1. UCX sees the transport; a mismatching UCX makes the module refuse.
expect "ucx_info lists transport coop" "$tmp/info" \
	bash -c "$env_run ucx_info -d | grep -q 'Transport: coop'"
LD_PRELOAD=$tmp/shim.so:$module ucx_info -d >"$tmp/shim" 2>&1
if ! grep -q 'Transport: coop' "$tmp/shim" &&
	grep -q 'built for UCX 1.13.1, this is UCX 1.12.0' "$tmp/shim"; then
	ok "another UCX version: coop not registered, the error says why"
else
	nok "another UCX version: coop not registered, the error says why" "$tmp/shim"
fi

# The transport's old setting name still sets its value, with a warning.
LD_PRELOAD=$module UCX_COOP_COOP_MIN=2m ucx_info -c >"$tmp/alias" 2>&1
LD_PRELOAD=$module UCX_COOP_COOP_MIN=2m ucx_info -d >>"$tmp/alias" 2>&1
if grep -q '^UCX_COOP_HYBRID_MIN=2M$' "$tmp/alias" &&
	[ "$(grep -c 'UCX_COOP_COOP_MIN is now UCX_COOP_HYBRID_MIN' "$tmp/alias")" = 1 ]; then
	ok "UCX_COOP_COOP_MIN sets UCX_COOP_HYBRID_MIN, one warning"
else
	nok "UCX_COOP_COOP_MIN sets UCX_COOP_HYBRID_MIN, one warning" "$tmp/alias"
fi

# 2. Unmodified MPI programs through coop, data checked; the rendezvous
#    lane of the tag protocol is coop.  Open MPI: the wrapper's default
#    (ob1, vader for messages, btl uct reading the rendezvous through
#    coop: no UCX lane to log, coop's copies counted instead) and pml ucx
#    (-p ucx, UCX's lanes).
mpich=(mpirun.mpich -np 2 -bind-to core -genv UCX_LOG_LEVEL info
	-genv COOP_VERBOSE 1)
ompi=(mpirun.openmpi --allow-run-as-root -np 2 --bind-to core -x UCX_LOG_LEVEL=info)
for mpi in mpich openmpi; do
	name=$mpi
	if [[ $mpi == mpich ]]; then launch=("${mpich[@]}"); else
		launch=(-p ucx "${ompi[@]}") name="openmpi (pml ucx)"; fi
	expect "$name: mpi_check (0 B .. 16 MiB, both ways, data checked)" "$tmp/$mpi" \
		"$env_run" "${launch[@]}" "$tmp/check.$mpi"
	if grep -q 'mpi_check: ok' "$tmp/$mpi" &&
		grep -qE 'ep_cfg\[[0-9]+\]: tag\([^)]*coop/memory' "$tmp/$mpi"; then
		ok "$name: the tag protocol's rendezvous went through coop"
	else
		nok "$name: the tag protocol's rendezvous went through coop" "$tmp/$mpi"
	fi
done
before=$(copy_bytes)
LD_PRELOAD=$tmp/copy_count.so expect \
	"openmpi (ob1 + vader + btl uct): mpi_check (0 B .. 16 MiB, both ways, data checked)" \
	"$tmp/ob1" "$env_run" mpirun.openmpi --allow-run-as-root -np 2 --bind-to core \
	-x COOP_VERBOSE=1 "$tmp/check.openmpi"
ob1_check_copied "openmpi (ob1 + vader + btl uct)" "$tmp/ob1" "$before"
# a component that cannot be built: a clear error, not Open MPI's own path
if COOP_CACHE=/proc/coopmpi-no-cache "$env_run" mpirun.openmpi --allow-run-as-root \
	-np 2 "$tmp/check.openmpi" >"$tmp/nobtl" 2>&1; then
	nok "openmpi: no btl uct to be had: the wrapper fails and names -p ucx" "$tmp/nobtl"
elif grep -q -- '-p ucx' "$tmp/nobtl" && ! grep -q 'mpi_check' "$tmp/nobtl"; then
	ok "openmpi: no btl uct to be had: the wrapper fails and names -p ucx"
else
	nok "openmpi: no btl uct to be had: the wrapper fails and names -p ucx" "$tmp/nobtl"
fi
# the NetPIPE runs (left out by --quick)
netpipe_checks() {
	expect "mpich: NetPIPE integrity check (NPmpich2 -i, 1 B .. 4 MiB)" "$tmp/np1" \
		"$env_run" mpirun.mpich -np 2 -bind-to core NPmpich2 -i -u 4194304 -o "$tmp/np1.out"
	expect "openmpi (ob1 + vader + btl uct): NetPIPE integrity check (NPopenmpi -i, 1 B .. 4 MiB)" "$tmp/np2" \
		"$env_run" mpirun.openmpi --allow-run-as-root -np 2 --bind-to core \
		NPopenmpi -i -u 4194304 -o "$tmp/np2.out"
}

# 2b. coop alone (UCX_TLS=coop,self): every message between the ranks -
#     UCP's wireup, eager and rendezvous - goes through the coop
#     interface's mailbox rings, bounce slots and copies.
coop_alone_checks() {
	for mpi in mpich openmpi; do
		# (-t selects Open MPI's pml ucx)
		if [[ $mpi == mpich ]]; then launch=("${mpich[@]}"); else launch=("${ompi[@]}"); fi
		expect "$mpi: UCX_TLS=coop,self: mpi_check (0 B .. 16 MiB, data checked)" \
			"$tmp/alone.$mpi" "$env_run" -t coop,self "${launch[@]}" "$tmp/check.$mpi"
		if grep -q 'mpi_check: ok' "$tmp/alone.$mpi" &&
			grep -qE 'ep_cfg\[[0-9]+\]: tag\(coop/memory\)' "$tmp/alone.$mpi" &&
			! grep -qE 'ep_cfg.*(posix|sysv|cma|tcp)/' "$tmp/alone.$mpi"; then
			ok "$mpi: UCX_TLS=coop,self: coop carries the whole tag protocol to the peer"
		else
			nok "$mpi: UCX_TLS=coop,self: coop carries the whole tag protocol to the peer" \
				"$tmp/alone.$mpi"
		fi
	done
	expect "mpich: UCX_TLS=coop,self: NetPIPE integrity check (1 B .. 4 MiB)" "$tmp/np3" \
		"$env_run" -t coop,self mpirun.mpich -np 2 -bind-to core NPmpich2 -i -u 4194304 \
		-o "$tmp/np3.out"
	expect "openmpi: UCX_TLS=coop,self: NetPIPE integrity check (1 B .. 4 MiB)" "$tmp/np4" \
		"$env_run" -t coop,self mpirun.openmpi --allow-run-as-root -np 2 --bind-to core \
		NPopenmpi -i -u 4194304 -o "$tmp/np4.out"
}

# 2c. Ranks that sleep between messages (UCP's wakeup feature: ucx_perftest
#     -E sleep waits in ucp_worker_wait) with coop alone: every wake-up
#     comes through coop's event fd (the driver's endpoint file with kmod,
#     the endpoint's socket with shm).
sleep_checks() {
	for t in "tag_lat -s 8 -n 2000" "tag_bw -s 1048576 -n 200"; do
		read -ra perf <<<"$t"
		perf_pair "$tmp/sleep" UCX_TLS=coop,self UCX_TLS=coop,self \
			-E sleep -t "${perf[@]}"
		if grep -q 'Final:' "$tmp/sleep" &&
			grep -qE 'ep_cfg\[[0-9]+\]: tag\(coop/memory\)' "$tmp/sleep"; then
			ok "UCX_TLS=coop,self, ranks sleeping on coop's event fd: ucx_perftest -E sleep -t ${t%% *}"
		else
			nok "UCX_TLS=coop,self, ranks sleeping on coop's event fd: ucx_perftest -E sleep -t ${t%% *}" \
				"$tmp/sleep"
		fi
	done
}

# 2d. put_zcopy rendezvous (UCX_RNDV_SCHEME=put_zcopy) by the offload
#     engine (UCX_COOP_PUT=dma), striped over CPU and engine (stripe), and
#     auto (the engine only if it is a DMA channel, "hw"), data checked.
#     Where the engine copies (the driver's, in the VM) the interface
#     names it and its copies show in sysfs dma_completed (one per put
#     from UCX_COOP_DMA_MIN = 1 MiB on: mpi_check has 36 such messages);
#     where it does not, none do: no engine (shm, dma=off: the interface
#     says so), or auto with the soft engine.
engine=none
[[ -e /dev/coopmpi && -r /sys/kernel/coopmpi/dma_engine ]] &&
	engine=$(cat /sys/kernel/coopmpi/dma_engine)
dma_done() { cat /sys/kernel/coopmpi/dma_completed 2>/dev/null || echo 0; }
put_modes=(dma stripe auto)
((quick)) && put_modes=(dma)
for mode in "${put_modes[@]}"; do
	log=$tmp/put.$mode
	before=$(dma_done)
	expect "mpich: put_zcopy, UCX_COOP_PUT=$mode: mpi_check (0 B .. 16 MiB, data checked)" \
		"$log" "$env_run" "${mpich[@]}" -genv UCX_RNDV_SCHEME put_zcopy \
		-genv UCX_COOP_PUT $mode "$tmp/check.mpich"
	grown=$(($(dma_done) - before))
	if [[ $engine == none ]]; then
		name="no offload engine, the CPU copied"
		said="UCX_COOP_PUT=$mode: no offload engine"
		want=0
	elif [[ $mode == auto && $engine != hw ]]; then
		name="the $engine engine not used, the CPU copied"
		said="UCX_COOP_PUT=auto: offload engine $engine not used"
		want=0
	else
		name="the $engine offload engine copied ($grown copies)"
		said="UCX_COOP_PUT=$mode: offload engine $engine"
		want=36
	fi
	if grep -q 'mpi_check: ok' "$log" && grep -q "$said" "$log" &&
		((want ? grown >= want : grown == 0)); then
		ok "mpich: put_zcopy, UCX_COOP_PUT=$mode: $name"
	else
		nok "mpich: put_zcopy, UCX_COOP_PUT=$mode: $name (dma_completed +$grown)" "$log"
	fi
done

# 2e. One way from UCX_COOP_HYBRID_MIN (1 MiB) on, the reader asks the
#     writer's help (COOP-p2p): in a tag_bw stream of 4 MiB messages the
#     sender, which receives nothing, copies a share too (the "copied:"
#     lines of COOP_VERBOSE=1), and the receiver the rest.
perf_pair "$tmp/help" COOP_VERBOSE=1 COOP_VERBOSE=1 -t tag_bw -s 4194304 -n 100
sent=$(copied_by "$tmp/help") received=$(copied_by "$tmp/help.srv")
if grep -q 'Final:' "$tmp/help" && ((sent > 0 && received > 0)); then
	ok "tag_bw 4 MiB one way: the writer helped the reader ($sent + $received bytes)"
else
	nok "tag_bw 4 MiB one way: the writer helped the reader ($sent + $received bytes)" "$tmp/help"
fi

# 2f. Buffers freed and mapped again at the same address between messages
#     (mpi_realloc: 64 KiB + 13 .. 4 MiB + 7, three rounds each, both
#     ways): the new bytes arrive, through coop - a kept registration or
#     window must show the new pages (in the VM: the driver's windows).
for mpi in mpich openmpi; do
	if [[ $mpi == mpich ]]; then launch=("${mpich[@]}"); else
		launch=("${ompi[@]}" -x COOP_VERBOSE=1); fi
	log=$tmp/realloc.$mpi.log
	timeout 300 "$env_run" "${launch[@]}" "$tmp/realloc.$mpi" >"$log" 2>&1
	copied=$(copied_by "$log")
	if grep -q 'mpi_realloc: ok' "$log" && ((copied > 0)); then
		ok "$mpi: buffers mapped again at the same address: the new data arrives through coop ($copied bytes)"
	else
		nok "$mpi: buffers mapped again at the same address: the new data arrives through coop ($copied bytes)" "$log"
	fi
done

provider=shm
[[ -e /dev/coopmpi ]] && provider=kmod
if grep -q "coopmpi\[[0-9]*\]: provider $provider" "$tmp/mpich"; then
	ok "the transport ran on the $provider provider"
else
	nok "the transport ran on the $provider provider" "$tmp/mpich"
fi

# 3. Processes of different domains (jobs) do not reach each other by
#    coop: UCX falls back to posix for them.
domain_checks() {
	perf_pair "$tmp/cli" UCX_COOP_DOMAIN=job-a UCX_COOP_DOMAIN=job-b \
		-t tag_bw -s 1048576 -n 20
	if grep -q 'Final:' "$tmp/cli" && grep -q 'ep_cfg' "$tmp/cli" &&
		! grep -qE 'ep_cfg.*coop/memory' "$tmp/cli"; then
		ok "different domains: no coop lane between them, the run completes"
	else
		nok "different domains: no coop lane between them, the run completes" "$tmp/cli"
	fi
}

# 3b. Buffers of ucp_mem_map(ALLOCATE) from coop's memory domain (md:coop
#     first in UCX_ALLOC_PRIO; ucx_perftest allocates so): the library's
#     shared heap, so its bytes are copied through windows (at least 90 %
#     of the timed ones: a chunk's window may be refused); with UCX's
#     own allocators (mmap, heap), on the shm provider, none is.  (With
#     UCX_TLS=coop,self the default UCX_ALLOC_PRIO's md:* is md:coop.)
heap_checks() {
	local prio=md:coop,md:sysv,md:posix,huge,thp,mmap,heap n=100
	local size=4194304 env="UCX_TLS=coop,self COOP_VERBOSE=1" w
	perf_pair "$tmp/heap" "$env UCX_ALLOC_PRIO=$prio" \
		"$env UCX_ALLOC_PRIO=$prio" -t tag_bw -s $size -n $n
	w=$(window_bytes "$tmp/heap" "$tmp/heap.srv")
	if grep -q 'Final:' "$tmp/heap" && ((w >= n * size * 9 / 10)); then
		ok "ucp_mem_map(ALLOCATE) by md:coop: tag_bw 4 MiB through windows ($w bytes)"
	else
		nok "ucp_mem_map(ALLOCATE) by md:coop: tag_bw 4 MiB through windows ($w bytes, want >= $((n * size * 9 / 10)))" "$tmp/heap"
	fi
	[[ $provider == shm ]] || return 0
	env+=" UCX_ALLOC_PRIO=mmap,heap"
	perf_pair "$tmp/heap" "$env" "$env" -t tag_bw -s $size -n $n
	w=$(window_bytes "$tmp/heap" "$tmp/heap.srv")
	if grep -q 'Final:' "$tmp/heap" && ((w == 0)); then
		ok "UCX's own allocators on shm: no windows"
	else
		nok "UCX's own allocators on shm: no windows ($w bytes)" "$tmp/heap"
	fi
}

if ((!quick)); then
	netpipe_checks
	coop_alone_checks
	sleep_checks
	domain_checks
	heap_checks
fi

# 4. A rank killed in the middle of a rendezvous: the job ends with an
#    error within the time limit, and nothing of it stays in /dev/shm
#    (checked below).
#    Open MPI: its default path through the wrapper (ob1 + btl uct), then
#    pml ucx (-t) with both transport lists.
for mpi in mpich openmpi; do
	if [[ $mpi == mpich ]]; then launch=(mpirun.mpich -np 2); else
		launch=(mpirun.openmpi --allow-run-as-root -np 2); fi
	paths=("self,posix,coop" "coop,self")
	[[ $mpi == openmpi ]] && paths=(ob1 "${paths[@]}")
	((quick)) && paths=("${paths[0]}")	# the launcher's default path
	for tls in "${paths[@]}"; do
		how=(-t "$tls")
		[[ $tls == ob1 ]] && how=()
		start=$SECONDS
		timeout 120 "$env_run" "${how[@]}" "${launch[@]}" "$tmp/kill.$mpi" >"$tmp/kill" 2>&1
		rc=$?
		if ((rc != 0 && rc != 124)); then
			ok "$mpi ($tls): a rank killed mid-rendezvous: the job fails (rc $rc) in $((SECONDS - start)) s"
		else
			nok "$mpi ($tls): a rank killed mid-rendezvous: the job fails, no hang (rc $rc)" "$tmp/kill"
		fi
	done
done

# 5. Nothing left behind in /dev/shm.
# Other jobs' files may come and go meanwhile: a new file that the
# reaper removes now (its domain's processes are all dead) is a leftover.
shm_files | comm -13 "$tmp/shm-before" - >"$tmp/shm-new"
lib/coop_info --reap >/dev/null
while read -r f; do
	[[ -e /dev/shm/$f ]] || echo "$f"
done <"$tmp/shm-new" >"$tmp/shm-left"
if [[ ! -s $tmp/shm-left ]]; then
	ok "no coopmpi files left in /dev/shm"
else
	nok "no coopmpi files left in /dev/shm" "$tmp/shm-left"
fi

echo "$pass passed, $fail failed"
((fail == 0))
