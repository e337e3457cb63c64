#!/bin/bash
# layer-check.sh - fail when a lower layer of libcoopmpi references a symbol
# defined by a higher layer.
#
# lib/ is split into layer folders, lowest first (base, providers, core,
# protocols, mpi, coll, api); calls may only go downward or stay within a
# folder.  The compiler
# cannot enforce that, but the object files record it: every symbol an object
# defines and every symbol it needs from elsewhere.  So:
#   1. map each symbol to the object (and layer) defining it: `nm -g
#      --defined-only`.  The library is built with -fvisibility=hidden, but in
#      relocatable .o files hidden symbols are still GLOBAL binding (readelf:
#      "GLOBAL HIDDEN"; nm: T/D/B/R...), so -g sees them.  File-local (static)
#      symbols cannot be referenced from another object and are ignored.
#   2. for each object's undefined references (`nm -u`), report those whose
#      definition lives in a higher layer.  Symbols defined outside the tree
#      (libc, liburing) have no entry in the map and are skipped.
#
# usage: layer-check.sh [OBJDIR [LAYER...]]
#   OBJDIR  object tree with one folder per layer, objects in OBJDIR/<layer>/*.o
#           (default: $LAYER_CHECK_OBJDIR, else lib/obj of this repository)
#   LAYER   layer folders, lowest first
#           (default: $LAYER_CHECK_LAYERS, else lib/Makefile's LAYERS:
#           "base providers core protocols mpi coll api")
# exit: 0 clean, 1 upward references found, 2 usage/tree error.
set -euo pipefail

prog=${0##*/}
die() { echo "$prog: $*" >&2; exit 2; }

if [[ ${1-} == -h || ${1-} == --help ]]; then
	sed -n 's/^# \{0,1\}//; /^usage:/,/^exit:/p' "$0"
	exit 0
fi

repo=$(cd "$(dirname "$0")/.." && pwd)
objdir=${1:-${LAYER_CHECK_OBJDIR:-$repo/lib/obj}}
shift $(($# > 0 ? 1 : 0))
if (($# > 0)); then
	layers=("$@")
else
	read -ra layers <<<"${LAYER_CHECK_LAYERS:-base providers core protocols mpi coll api}"
fi

[[ -d $objdir ]] || die "object directory '$objdir' not found (build the library first)"
((${#layers[@]} > 0)) || die "no layers given"

declare -A rank=()     # layer name -> position, 0 = lowest
declare -A def_obj=()  # symbol -> "<layer>/<name>.o" that defines it
declare -A def_rank=() # symbol -> rank of that layer
objs=()                # every object, lowest layer first: "<layer>/<name>.o"
obj_rank=()            # rank of objs[k]

# Pass 1: what each layer defines.
for i in "${!layers[@]}"; do
	layer=${layers[i]}
	[[ -z ${rank[$layer]+x} ]] || die "layer '$layer' listed twice"
	rank[$layer]=$i
	[[ -d $objdir/$layer ]] || die "layer '$layer': no folder $objdir/$layer"
	shopt -s nullglob
	files=("$objdir/$layer"/*.o)
	shopt -u nullglob
	((${#files[@]} > 0)) || die "layer '$layer': no objects in $objdir/$layer"
	for f in "${files[@]}"; do
		obj=$layer/${f##*/}
		objs+=("$obj")
		obj_rank+=("$i")
		# -P: "name type value size", one symbol per line.  nm runs in $(),
		# not piped into the loop, so a corrupt object stops the check (exit 2).
		syms=$(nm -P -g --defined-only "$f") || die "nm failed on $f"
		while read -r sym _; do
			# A symbol defined twice (e.g. a weak default) keeps its lowest
			# definition: a lower layer using it then resolves downward.
			[[ -n $sym && -z ${def_obj[$sym]+x} ]] || continue
			def_obj[$sym]=$obj
			def_rank[$sym]=$i
		done <<<"$syms"
	done
done

# Pass 2: who references what.
violations=0
for k in "${!objs[@]}"; do
	obj=${objs[k]} i=${obj_rank[k]}
	refs=$(nm -P -u "$objdir/$obj") || die "nm failed on $objdir/$obj"
	while read -r sym _; do
		[[ -n $sym && -n ${def_obj[$sym]+x} ]] || continue
		j=${def_rank[$sym]}
		if ((j > i)); then
			echo "layer violation: $obj (${layers[i]}) uses $sym defined in ${def_obj[$sym]} (${layers[j]})"
			violations=$((violations + 1))
		fi
	done <<<"$refs"
done

summary="layer check: ${#layers[@]} layers, ${#objs[@]} objects"
if ((violations > 0)); then
	echo "$summary, $violations upward reference(s)"
	exit 1
fi
echo "$summary, no upward references"
