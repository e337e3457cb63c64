# shellcheck shell=bash
# Sourced by the scripts that build into the cache (scripts/vm/debug-kernel,
# scripts/ucx-gtest.sh): a build is keyed by its inputs, so a changed
# input leaves the old build behind (~2 GB for a debug kernel).

# cache_prune DIR PREFIX KEEP: removes the builds DIR/PREFIX* other than
# KEEP, with their logs and locks, unless a run holds one's lock
cache_prune() {
	local dir=$1 prefix=$2 keep=$3 d
	for d in "$dir/$prefix"*; do
		[[ -d $d && ${d##*/} != "$keep" ]] || continue
		# a link to its build directory, or the directory
		if (exec 8>"$d.lock" && flock -n 8 &&
			rm -rf -- "$(readlink -f -- "$d")" "$d" "$d.log" "$d.lock"); then
			echo "cache: removed the stale ${d##*/}" >&2
		fi
	done
}
