#!/bin/bash
# field-check.sh - fail when a file of libcoopmpi writes a field that another
# layer owns.
#
# layer-check.sh sees calls; a write to another layer's state is no call.
# The owners are listed below: a layer's state struct (ctx->proto, ctx->mpi,
# ctx->coll) is its own, all fields; struct coop_request (core's) has a part
# per layer above that keeps state in it (match: mpi/; rndv: protocols/).
# For every source file, clang-query finds the assignments (=, op=) and
# increments or decrements whose left side is such a field, and each one
# outside the owner's folder is reported.  Reading is free, and so are
# writes through a pointer the owner handed out (&r->field).
#
# usage: field-check.sh [LIBDIR]
#   LIBDIR  lib/ of this repository by default (its layer folders, lowest
#           first as lib/Makefile's LAYERS)
# exit: 0 clean, 1 foreign writes found, 2 usage/tool error.
set -euo pipefail

case ${1-} in
-h | --help) sed -n 's/^# \{0,1\}//; /^usage:/,/^exit:/p' "$0" && exit 0 ;;
esac
die() { echo "${0##*/}: $*" >&2; exit 2; }
libdir=${1:-$(cd "$(dirname "$0")/../lib" && pwd)}
layers=(base providers core protocols mpi coll api)
query=$(command -v clang-query || command -v clang-query-14) ||
	die "clang-query not found (Debian: clang-tools; scripts/deps.sh installs it)"

# STRUCT LAYER FIELD... (ALL: every field)
owners=(
	"coop_proto_state protocols ALL"
	"coop_mpi_state mpi ALL"
	"coop_coll_state coll ALL"
	"coop_request mpi match"
	"coop_request protocols rndv"
)

# member(...) of the fields, for clang-query
fields_matcher() {
	local names=("$@") q=() f
	[[ ${names[0]} == ALL ]] && { echo "anything()"; return; }
	for f in "${names[@]}"; do q+=("\"$f\""); done
	local IFS=,
	echo "member(hasAnyName(${q[*]}))"
}

# the matcher of writes to STRUCT's FIELDS, bound to NAME: the written
# lvalue is such a member, or a part of one (r->rndv.u.coop.split) - a
# member of STRUCT anywhere in it (also in an index: a false alarm to
# rewrite, not to list)
write_matcher() {
	local name=$1 s=$2 fields
	shift 2
	fields=$(fields_matcher "$@")
	local obj="hasObjectExpression(anyOf(hasType(pointsTo(recordDecl(hasName(\"$s\")))), hasType(recordDecl(hasName(\"$s\")))))"
	local m="memberExpr($obj, $fields)"
	local lv="ignoringParenImpCasts(anyOf($m, hasDescendant($m)))"
	echo "match stmt(anyOf(binaryOperator(isAssignmentOperator(), hasLHS($lv)), unaryOperator(hasAnyOperatorName(\"++\", \"--\"), hasUnaryOperand($lv)))).bind(\"$name\")"
}

# FILE:LINE:COL of a write: the lvalue it writes (the member chain that
# starts there, after a ++ or --)
lvalue_at() {
	local file=${1%%:*} rest=${1#*:} line col text
	line=${rest%%:*}
	col=${rest#*:}
	text=$(sed -n "${line}p" "$file")
	text=${text:$((col - 1))}
	[[ $text =~ ^(\+\+|--)?[[:space:]]*([[:alnum:]_]+((->|\.)[[:alnum:]_]+)*) ]] &&
		echo "${BASH_REMATCH[2]}"
}

# the files of LAYER with the include path its objects are built with
incs=()
bad=0
for layer in "${layers[@]}"; do
	incs+=("-I$libdir/$layer")
	shopt -s nullglob
	srcs=("$libdir/$layer"/*.c)
	shopt -u nullglob
	((${#srcs[@]})) || continue
	# one parse of the layer's files: a matcher per foreign owner entry,
	# each bound to the entry's index
	cmds=()
	for i in "${!owners[@]}"; do
		read -r s owner fields <<<"${owners[i]}"
		[[ $owner == "$layer" ]] && continue
		# shellcheck disable=SC2086 # fields: words
		cmds+=(-c "$(write_matcher "w$i" "$s" $fields)")
	done
	out=$("$query" -c "set output diag" "${cmds[@]}" "${srcs[@]}" \
		-- -std=c11 -D_GNU_SOURCE \
		-I"$libdir/../include" "${incs[@]}" 2>&1) ||
		die "clang-query failed on $layer/: $(head -3 <<<"$out")"
	grep -q 'error:' <<<"$out" &&
		die "clang-query cannot parse $layer/: $(grep -m3 'error:' <<<"$out")"
	while read -r where i; do
		read -r s owner _ <<<"${owners[i]}"
		echo "foreign write: ${where#"$libdir"/}: $(lvalue_at "$where") (struct $s's, owned by $owner/)"
		bad=1
	done < <(sed -n 's/^\([^ ]*\): note: "w\([0-9]*\)" binds here$/\1 \2/p' <<<"$out" |
		sort -u)
done
((bad)) && exit 1
echo "field check: ${#layers[@]} layers, ${#owners[@]} owner entries, no foreign writes"
