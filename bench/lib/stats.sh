# shellcheck shell=bash disable=SC2154 # out: set by bench/run-suite.sh
# bench/lib/stats.sh - the benchmark suite's statistics, in one place:
# medians over rounds, ratios over interleaved rounds, Markdown tables of
# medians, sizes and numbers as the reports print them.  Sourced by
# bench/run-suite.sh (for bench/lib/report.sh) and by bench/report.sh;
# defines functions only.
#
# A CSV argument is a NAME: the file $out/NAME.csv (out: the results
# directory of bench/run-suite.sh), "series,round,size_bytes,value..." as
# bench/lib/run.sh ingests it.  A missing CSV or value prints NA.

# The awk function every median here is taken with: median(v, n) of
# v[1..n], sorted in place, numerically (insertion sort: n is a handful of
# rounds); odd n: the middle value as printed, even n: the mean of the two.
awk_median='
function median(v, n,   i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && v[j] + 0 < v[j - 1] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
	return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}'

# raw_median FILE SIZE: median of the values printed for SIZE in FILE, a
# program's "size value" lines (of several runs, appended)
raw_median() {
	awk -v s="$2" "$awk_median"'
		$1 == s { v[++n] = $2 }
		END { print median(v, n) }' "$1"
}

# med CSV SERIES SIZE [COL]: median over rounds (COL: 1 = first value)
med() {
	[[ -e $out/$1.csv ]] || {
		echo NA
		return
	}
	awk -F, -v s="$2" -v z="$3" -v c="${4:-1}" "$awk_median"'
		FNR > 1 && $1 == s && $3 == z { v[++n] = $(3 + c) }
		END { print n ? median(v, n) : "NA" }' "$out/$1.csv"
}

# ratio CSV_A SERIES_A CSV_B SERIES_B SIZE [COL_A COL_B]: median over
# rounds of A/B, A and B taken from the same round (value columns, default
# 1 and 1)
ratio() {
	[[ -e $out/$1.csv && -e $out/$3.csv ]] || {
		echo NA
		return
	}
	awk -F, -v sa="$2" -v sb="$4" -v z="$5" -v ca="${6:-1}" -v cb="${7:-1}" "$awk_median"'
		FNR == 1 { f++; next }
		f == 1 && $1 == sa && $3 == z { a[$2] = $(3 + ca) }
		f == 2 && $1 == sb && $3 == z { b[$2] = $(3 + cb) }
		END {
			for (r in a) if ((r in b) && b[r] > 0) v[++n] = a[r] / b[r]
			if (!n) { print "NA"; exit }
			printf "%.3f\n", median(v, n)
		}' "$out/$1.csv" "$out/$3.csv"
}

# min_ratio CSV_A SERIES_A CSV_B SERIES_B SIZES...: the smallest of
# ratio's values at SIZES (NA if one is missing)
min_ratio() {
	local a=$1 sa=$2 b=$3 sb=$4 z r min=NA
	shift 4
	for z; do
		r=$(ratio "$a" "$sa" "$b" "$sb" "$z")
		[[ $r == NA ]] && {
			echo NA
			return
		}
		if [[ $min == NA ]] || awk -v r="$r" -v m="$min" 'BEGIN { exit !(r < m) }'; then
			min=$r
		fi
	done
	echo "$min"
}

# medians CSV SERIES COL: "size median" lines of value column COL of
# SERIES, median over rounds, sorted by size
medians() {
	awk -F, -v s="$2" -v c="$3" 'FNR > 1 && $1 == s { print $3, $(3 + c) }' "$out/$1.csv" |
		sort -n -k1,1 | awk "$awk_median"'
		$1 != p { if (n) print p, median(v, n); p = $1; n = 0 }
		{ v[++n] = $2 }
		END { if (n) print p, median(v, n) }'
}

# table CSV COL FORMAT SIZES...: Markdown table, a row per series (in the
# order of the CSV), a column per size, medians over rounds
table() {
	local csv=$1 col=$2 fmt=$3 s hdr="| series |" sep="|---|"
	shift 3
	[[ -e $out/$csv.csv ]] || {
		echo "(no data)"
		return
	}
	for s in "$@"; do
		hdr+=" $(human "$s") |"
		sep+="---:|"
	done
	echo "$hdr"
	echo "$sep"
	awk -F, -v c="$col" -v fmt="$fmt" -v sizes="$*" "$awk_median"'
		BEGIN { n = split(sizes, z, " ") }
		FNR > 1 {
			if (!($1 in seen)) { seen[$1] = 1; order[++ns] = $1 }
			k = $1 SUBSEP $3; cnt[k]++; val[k, cnt[k]] = $(3 + c)
		}
		END {
			for (i = 1; i <= ns; i++) {
				line = "| " order[i] " |"
				for (j = 1; j <= n; j++) {
					k = order[i] SUBSEP z[j]; m = cnt[k]
					if (!m) { line = line " |"; continue }
					for (a = 1; a <= m; a++) v[a] = val[k, a] + 0
					line = line " " sprintf(fmt, median(v, m)) " |"
				}
				print line
			}
		}' "$out/$csv.csv"
}

# human SIZE: 8 B, 64 KiB, 1 MiB
human() {
	local s=$1
	if ((s >= 1048576 && s % 1048576 == 0)); then
		echo "$((s / 1048576)) MiB"
	elif ((s >= 1024 && s % 1024 == 0)); then
		echo "$((s / 1024)) KiB"
	else
		echo "$s B"
	fi
}

# fmt X FORMAT: X printed with FORMAT, NA stays NA
fmt() {
	awk -v x="$1" -v f="$2" 'BEGIN { if (x == "NA") print x; else printf f "\n", x }'
}
