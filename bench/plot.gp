# bench/plot.gp - one chart of the benchmark suite; bench/lib/report.sh
# prepares one "size value" file per series and calls
#
#   gnuplot -e "files='1.dat 2.dat ...'; titles='s1 s2 ...'; out='x.png';
#               ttl='title'; ylab='y label'
#               [; linear=1] [; xmin=N] [; lcs='1 1 2 2 ...'; dts='1 2 1 2 ...']"
#               bench/plot.gp
#
# x: message size, log2; y: log10 (linear=1: linear 0..105, for
# percentages).  By default every series has its own colour, copy limits
# (memcpy-*, process_vm_readv) are dashed, peers (openmpi, mpich, ucx)
# thick, coopmpi protocols thin with points; lcs/dts give colour indexes
# and dash types per series instead.
if (!exists("linear")) linear = 0
if (!exists("xmin")) xmin = 0.7
if (!exists("lcs")) lcs = ""
if (!exists("dts")) dts = ""

set terminal pngcairo size 1280,800 noenhanced font "sans,11"
set output out
set title ttl
set xlabel "message size (bytes)"
set ylabel ylab
set logscale x 2
set xrange [xmin:24000000]
if (linear) { set yrange [0:105] } else { set logscale y 10; set format y "%g" }
set xtics ("1" 1, "4" 4, "16" 16, "64" 64, "256" 256, "1K" 1024, "4K" 4096, \
           "16K" 16384, "64K" 65536, "256K" 262144, "1M" 1048576, \
           "4M" 4194304, "16M" 16777216)
set grid xtics ytics mytics
set key outside right top spacing 1.2

array C[12] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", \
               "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", \
               "#000000", "#aa6600"]
colidx(i) = words(lcs) >= i ? int(word(lcs, i)) : i
col(i) = C[(colidx(i) - 1) % 12 + 1]
islimit(t) = strstrt(t, "memcpy") > 0 || strstrt(t, "process_vm") > 0
ispeer(t) = t eq "openmpi" || t eq "mpich" || t eq "ucx"
dt(i) = words(dts) >= i ? int(word(dts, i)) : islimit(word(titles, i)) ? 2 : 1
lw(t) = ispeer(t) ? 3 : islimit(t) ? 2 : 1.5
ps(t) = ispeer(t) || islimit(t) ? 0.6 : 1

plot for [i = 1:words(files)] word(files, i) using 1:2 \
	title word(titles, i) with linespoints lc rgb col(i) dt dt(i) \
	lw lw(word(titles, i)) pt (colidx(i) % 13 + 1) ps ps(word(titles, i))
