# shellcheck shell=bash disable=SC2154 # tmo, ncpu: the sourcing script's
# bench/lib/mpi.sh - the MPI peers as the benchmarks launch them, 2 ranks
# bound to cores when there are 2 CPUs: each MPI's default path and the
# same unmodified program through UCX with the coop transport.  Sourced by
# bench/lib/run.sh (natively) and bench/vm-stage.sh (in the VM, on the
# driver); both set tmo (seconds per run) and ncpu.

ompi() { # ompi ARGS...: bench/bin/mpi_peer.openmpi, 2 ranks, vader BTL + CMA
	local bind=()
	((ncpu >= 2)) && bind=(--bind-to core)
	timeout -k 5 "$tmo" mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 \
		"${bind[@]}" --mca pml ob1 --mca btl self,vader \
		--mca btl_vader_single_copy_mechanism cma \
		bench/bin/mpi_peer.openmpi "$@"
}

# ompi_ucx ARGS...: the same peer through Open MPI's pml ucx on UCX's own
# transports (no coop): the path coop replaces, to tell pml ucx's cost
# from coop's
ompi_ucx() {
	local bind=()
	((ncpu >= 2)) && bind=(--bind-to core)
	timeout -k 5 "$tmo" mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 \
		"${bind[@]}" --mca pml ucx --mca pml_ucx_tls any \
		--mca pml_ucx_devices any bench/bin/mpi_peer.openmpi "$@"
}

mpich() { # mpich ARGS...: bench/bin/mpi_peer.mpich, 2 ranks
	local bind=()
	((ncpu >= 2)) && bind=(-bind-to core)
	timeout -k 5 "$tmo" mpirun.mpich -np 2 "${bind[@]}" bench/bin/mpi_peer.mpich "$@"
}

# ompi_coop / mpich_coop ARGS...: the same peers, unmodified, through the
# coop transport (scripts/coopmpi-run): Open MPI's ob1 with vader for the
# messages and btl uct reading the rendezvous through coop (the wrapper's
# default); MPICH through UCX with the wrapper's UCX_TLS (self,posix,coop,tcp)
ompi_coop() {
	local bind=()
	((ncpu >= 2)) && bind=(--bind-to core)
	timeout -k 5 "$tmo" scripts/coopmpi-run mpirun.openmpi --allow-run-as-root \
		--oversubscribe -np 2 "${bind[@]}" bench/bin/mpi_peer.openmpi "$@"
}

# ompi_coop_pml_ucx ARGS...: Open MPI through its pml ucx with the coop
# transport (scripts/coopmpi-run with COOP_OMPI_PML=ucx, as -p ucx:
# the wrapper's UCX_TLS), the wrapper's Open MPI path before ob1 + btl uct
ompi_coop_pml_ucx() {
	COOP_OMPI_PML=ucx ompi_coop "$@"
}

mpich_coop() {
	local bind=()
	((ncpu >= 2)) && bind=(-bind-to core)
	timeout -k 5 "$tmo" scripts/coopmpi-run mpirun.mpich -np 2 "${bind[@]}" \
		bench/bin/mpi_peer.mpich "$@"
}

