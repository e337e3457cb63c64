# shellcheck shell=bash disable=SC2154 # tmo, ncpu: the sourcing script's
# bench/lib/mpi.sh - the MPI peers as the benchmarks launch them: each
# MPI's default path and the same unmodified program through UCX with the
# coop transport.  2 ranks, each bound to a core when there are 2 CPUs;
# `np4 RUNNER ARGS...` runs 4 ranks instead (more ranks than CPUs: unbound,
# the scheduler shares the CPUs).  Sourced by bench/lib/run.sh (natively)
# and bench/vm-stage.sh (in the VM, on the driver); both set tmo (seconds
# per run) and ncpu.

mpi_np=2

np4() { # np4 RUNNER ARGS...: RUNNER with 4 ranks
	local mpi_np=4
	"$@"
}

# ompi_mpirun / mpich_mpirun: the launcher's command line with mpi_np
# ranks, bound when each has a CPU of its own, in the caller's mpirun
# array (timeout and coopmpi-run run programs, not functions)
ompi_mpirun() {
	local bind=none
	((ncpu >= mpi_np)) && bind=core
	mpirun=(mpirun.openmpi --allow-run-as-root --oversubscribe -np "$mpi_np" --bind-to "$bind")
}

mpich_mpirun() {
	local bind=none
	((ncpu >= mpi_np)) && bind=core
	mpirun=(mpirun.mpich -np "$mpi_np" -bind-to "$bind")
}

ompi() { # ompi ARGS...: bench/bin/mpi_peer.openmpi, vader BTL + CMA
	local mpirun
	ompi_mpirun
	timeout -k 5 "$tmo" "${mpirun[@]}" --mca pml ob1 --mca btl self,vader \
		--mca btl_vader_single_copy_mechanism cma \
		bench/bin/mpi_peer.openmpi "$@"
}

# ompi_ucx ARGS...: the same peer through Open MPI's pml ucx on UCX's own
# transports (no coop): the path coop replaces, to tell pml ucx's cost
# from coop's
ompi_ucx() {
	local mpirun
	ompi_mpirun
	timeout -k 5 "$tmo" "${mpirun[@]}" --mca pml ucx --mca pml_ucx_tls any \
		--mca pml_ucx_devices any bench/bin/mpi_peer.openmpi "$@"
}

mpich() { # mpich ARGS...: bench/bin/mpi_peer.mpich (UCX's defaults)
	local mpirun
	mpich_mpirun
	timeout -k 5 "$tmo" "${mpirun[@]}" bench/bin/mpi_peer.mpich "$@"
}

# ompi_coop / mpich_coop ARGS...: the same peers, unmodified, through the
# coop transport (scripts/coopmpi-run): Open MPI's ob1 with vader for the
# messages and btl uct reading the rendezvous through coop (the wrapper's
# default); MPICH through UCX with the wrapper's UCX_TLS (self,posix,coop,tcp)
ompi_coop() {
	local mpirun
	ompi_mpirun
	timeout -k 5 "$tmo" scripts/coopmpi-run "${mpirun[@]}" \
		bench/bin/mpi_peer.openmpi "$@"
}

# ompi_coop_pml_ucx ARGS...: Open MPI through its pml ucx with the coop
# transport (scripts/coopmpi-run with COOP_OMPI_PML=ucx, as -p ucx:
# the wrapper's UCX_TLS), the wrapper's Open MPI path before ob1 + btl uct
ompi_coop_pml_ucx() {
	COOP_OMPI_PML=ucx ompi_coop "$@"
}

mpich_coop() {
	local mpirun
	mpich_mpirun
	timeout -k 5 "$tmo" scripts/coopmpi-run "${mpirun[@]}" \
		bench/bin/mpi_peer.mpich "$@"
}
