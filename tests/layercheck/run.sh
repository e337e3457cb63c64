#!/bin/bash
# Test of scripts/layer-check.sh on a miniature layered tree (layers a < b < c,
# sources in src/), built in a temp dir, then - when lib/ is built - on a
# copy of the library's objects with a deliberate upward call added.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
check=$here/../../scripts/layer-check.sh
src=$here/src
# The caller's overrides must not leak into the runs below.
unset LAYER_CHECK_OBJDIR LAYER_CHECK_LAYERS

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

pass=0 fail=0
ok() { echo "ok   - $1"; pass=$((pass + 1)); }
nok() { echo "FAIL - $1"; fail=$((fail + 1)); }
# expect CONDITION-RESULT DESCRIPTION: record one assertion (0 = holds).
expect() { if (($1 == 0)); then ok "$2"; else nok "$2"; fi; }

# build TREE FILE...: compile each src-relative FILE to TREE/<layer>/<name>.o,
# the layer given by the FILE's folder, or by a "LAYER=" prefix.  -O0 keeps
# static functions as local symbols; -fvisibility=hidden as in lib/.
build() {
	local tree=$1 f layer name
	shift
	for f in "$@"; do
		layer=${f%%/*}
		if [[ $f == *=* ]]; then layer=${f%%=*} f=${f#*=}; fi
		name=${f##*/}
		mkdir -p "$tree/$layer"
		cc -c -O0 -fvisibility=hidden -Wall -Werror "$src/$f" \
			-o "$tree/$layer/${name%.c}.o" || return 1
	done
}

# run NAME ARGS...: run the checker, keep output in $out and status in $rc.
run() {
	local name=$1
	shift
	"$check" "$@" >"$tmp/$name.out" 2>&1
	rc=$?
	out=$(<"$tmp/$name.out")
	sed 's/^/     | /' "$tmp/$name.out"
}

clean_srcs=(a/base.c a/helper.c b/mid.c c/top.c c/twin.c)
build "$tmp/clean" "${clean_srcs[@]}" || { echo "cannot build the test tree"; exit 1; }
build "$tmp/up" "${clean_srcs[@]}" a=upcall.c || { echo "cannot build the test tree"; exit 1; }

# 1. The clean tree passes.  It is full of references that must not count:
#    downward (b->a, c->b, c->a, function and data), within a layer (a->a,
#    c->c), outside the tree (memset), and ext_hook, which only a higher
#    layer's *static* function shares its name with.
run clean "$tmp/clean" a b c
expect "$rc" "clean tree: exit 0 (got $rc)"
[[ $out == "layer check: 3 layers, 5 objects, no upward references" ]]
expect $? "clean tree: one summary line, 3 layers and 5 objects"

# 2. One upward call a -> c: exit 1, one line naming object, symbol, layers.
run up "$tmp/up" a b c
[[ $rc == 1 ]]
expect $? "upward call: exit 1 (got $rc)"
want="layer violation: a/upcall.o (a) uses c_top defined in c/top.o (c)"
grep -qxF "$want" <<<"$out"
expect $? "upward call: reported as '$want'"

# 3. ...and nothing else from that tree: downward and same-layer calls,
#    libc and the static twin stay unreported.
n=$(grep -c '^layer violation:' <<<"$out")
[[ $n == 1 ]]
expect $? "upward call: exactly one violation line (got $n)"
! grep -qE 'uses (a_base|a_helper|a_table|b_mid|c_twin|memset|ext_hook) ' <<<"$out"
expect $? "downward / same-layer / external references not reported"

# The same layer list read from the environment instead of arguments.
LAYER_CHECK_OBJDIR=$tmp/up LAYER_CHECK_LAYERS="a b c" run env
[[ $rc == 1 ]] && grep -qxF "$want" <<<"$out"
expect $? "layers from LAYER_CHECK_OBJDIR/LAYER_CHECK_LAYERS: same result"

# Layer order is what defines "upward": with c lowest, c -> b -> a are the
# violations and a -> c is fine.
run reversed "$tmp/up" c b a
[[ $rc == 1 ]] && ! grep -q 'uses c_top ' <<<"$out" &&
	grep -qxF "layer violation: c/top.o (c) uses b_mid defined in b/mid.o (b)" <<<"$out"
expect $? "reversed layer order: violations follow the order given"

# 4. Missing object dir, and a layer with no objects: exit 2 with a message.
run missing "$tmp/nonexistent" a b c
[[ $rc == 2 && $out == *"not found"* ]]
expect $? "missing object dir: exit 2 with a message (got $rc)"
mkdir "$tmp/clean/d"
run empty "$tmp/clean" a b c d
[[ $rc == 2 && $out == *"no objects"* ]]
expect $? "empty layer: exit 2 with a message (got $rc)"

# 5. The real library (when it is built): its objects pass, and the same
#    objects plus one core file calling an MPI-layer function fail.
lib_obj=$here/../../lib/obj
if [[ -d $lib_obj/core ]]; then
	layers=(base providers core protocols mpi coll api)
	run lib "$lib_obj" "${layers[@]}"
	expect "$rc" "lib/obj: exit 0 (got $rc)"
	cp -r "$lib_obj" "$tmp/lib"
	printf 'void coop_rtr_resume(void *ctx, unsigned short comm);\n%s\n' \
		'void core_upcall(void *ctx) { coop_rtr_resume(ctx, 0); }' \
		>"$tmp/core_upcall.c"
	cc -c -fvisibility=hidden "$tmp/core_upcall.c" \
		-o "$tmp/lib/core/core_upcall.o"
	run lib-up "$tmp/lib" "${layers[@]}"
	want="layer violation: core/core_upcall.o (core) uses coop_rtr_resume defined in mpi/rtr.o (mpi)"
	[[ $rc == 1 ]] && grep -qxF "$want" <<<"$out"
	expect $? "lib/obj + a core call into mpi/: '$want'"
fi

# 6. scripts/field-check.sh: lib/ as it is passes; a copy with a core file
#    that writes the MPI layer's and the protocol layer's part of a request
#    (the latter deep in its union), and
#    an api file that writes the protocol layer's state, fails naming each.
fields=$here/../../scripts/field-check.sh
if command -v clang-query >/dev/null || command -v clang-query-14 >/dev/null; then
	out=$("$fields" 2>&1)
	expect $? "field-check: lib/ writes only its own layers' fields ($out)"
	mkdir -p "$tmp/fields"
	cp -r "$here/../../lib" "$here/../../include" "$tmp/fields/"
	printf '#include "core.h"\n%s\n' \
		'void zz(struct coop_request *r) { r->match.ticketed = 1; ++r->rndv.u.coop.split; }' \
		>"$tmp/fields/lib/core/zz_foreign.c"
	printf '#include "api_int.h"\n%s\n' \
		'void zz_api(struct coop_context *c) { c->proto->send_hooks = 0; }' \
		>"$tmp/fields/lib/api/zz_foreign.c"
	out=$("$fields" "$tmp/fields/lib" 2>&1)
	rc=$?
	for want in \
		"foreign write: core/zz_foreign.c:2:35: r->match.ticketed (struct coop_request's, owned by mpi/)" \
		"foreign write: core/zz_foreign.c:2:58: r->rndv.u.coop.split (struct coop_request's, owned by protocols/)" \
		"foreign write: api/zz_foreign.c:2:39: c->proto->send_hooks (struct coop_proto_state's, owned by protocols/)"; do
		[[ $rc == 1 ]] && grep -qxF "$want" <<<"$out"
		expect $? "field-check, a foreign write added: '$want'"
	done
else
	nok "field-check: no clang-query (scripts/deps.sh installs clang-tools)"
fi

echo "$pass passed, $fail failed"
((fail == 0))
