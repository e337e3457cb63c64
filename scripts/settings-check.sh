#!/bin/bash
# settings-check.sh - fail when a file of coopmpi uses a COOP_ environment
# variable that libcoopmpi would warn about at coop_init (COOP_WARN_SETTINGS):
# one that is neither a name of lib/core/config.c's table (a setting, a
# variable of coop_init_from_env's section, an old name) nor on its list of
# the project's own variables, others[]; and when others[] names one that
# no file uses any more.  So the library warns about exactly the COOP_
# names that nothing in the project uses.
#
# A use, in every file git tracks but config.c and this one:
#   $COOP_X, ${COOP_X...}, COOP_X=...   (shell, docs, tests' environments)
#   "COOP_X", a whole string, in C and Python files (getenv, setenv, tables)
#     but lib/ucx's, which are UCX's names (UCX_COOP_X)
# A line saying "settings-check: skip" is left out (a misspelling on
# purpose).  The library's names are config.c's whole "COOP_X" strings; a
# name of others[] that ends in _ stands for every name it begins.
#
# usage: settings-check.sh
# exit: 0 clean, 1 names to fix, 2 not in a git checkout.
set -euo pipefail

prog=${0##*/}
cd "$(dirname "$0")/.."
config=lib/core/config.c
files=$(git ls-files 2>/dev/null) || { echo "$prog: not a git checkout" >&2; exit 2; }

known=$(grep -oE '"COOP_[A-Z0-9_]+"' "$config" | tr -d '"' | sort -u | tr '\n' ' ')
others=$(sed -n '/^static const char \*const others\[\] = {/,/^};/p' "$config" |
	grep -oE '"COOP_[A-Z0-9_]+"' | tr -d '"' | tr '\n' ' ')
[[ -n $others ]] || { echo "$prog: no others[] in $config" >&2; exit 2; }

grep -v -x -e "$config" -e "scripts/$prog" <<<"$files" | tr '\n' '\0' |
	xargs -0 grep -nHIE 'COOP_[A-Z0-9_]' -- 2>/dev/null |
	awk -v prog="$prog" -v known="$known" -v others="$others" '
function is_known(n,   i) {
	if (n in name)
		return 1
	for (i in prefix)
		if (length(n) > length(i) && substr(n, 1, length(i)) == i)
			return 1
	return 0
}
# every name the pattern re finds in t
function uses(t, re,   m) {
	while (match(t, re)) {
		m = substr(t, RSTART, RLENGTH)
		t = substr(t, RSTART + RLENGTH)
		match(m, /COOP_[A-Z0-9_]*[A-Z0-9]/)
		m = substr(m, RSTART, RLENGTH)
		used[m] = 1
		if (!is_known(m)) {
			printf "%s: %s: %s is no setting of libcoopmpi nor one of the project'"'"'s variables (others[] in lib/core/config.c)\n", prog, where, m
			bad++
		}
	}
}
BEGIN {
	n = split(known, k, " ")
	for (i = 1; i <= n; i++)
		if (k[i] ~ /_$/)
			prefix[k[i]] = 1
		else
			name[k[i]] = 1
}
/settings-check: skip/ { next }
{
	file = $0; sub(/:.*/, "", file)
	text = substr($0, length(file) + 2)
	line = text; sub(/:.*/, "", line)
	where = file ":" line
	text = substr(text, length(line) + 2)
	uses(text, "\\$[{]?COOP_[A-Z0-9_]+")
	uses(text, "(^|[^A-Za-z0-9_])COOP_[A-Z0-9_]*[A-Z0-9]=")
	if (file ~ /\.(c|h|py)$/ && file !~ /^lib\/ucx\//)
		uses(text, "\"COOP_[A-Z0-9_]+\"")
}
END {
	n = split(others, o, " ")
	for (i = 1; i <= n; i++) {
		found = o[i] in used
		for (u in used)
			if (o[i] ~ /_$/ && length(u) > length(o[i]) &&
			    substr(u, 1, length(o[i])) == o[i])
				found = 1
		if (!found) {
			printf "%s: %s is in others[] (lib/core/config.c), but no file uses it\n", prog, o[i]
			bad++
		}
	}
	nused = 0
	for (u in used)
		nused++
	if (bad)
		exit 1
	printf "%s: %d COOP_ names used, each a setting or one of others[]\n", prog, nused
}'
