# make bench-horizon: one variant, both systems over time (the data files of run.sh: seconds, jobs/s, backlog, dead
# tuples, heap MB, index MB, autovacuum passes, claim-index scans, pages per scan, entries per scan, oldest xmin age,
# claims, claim p50 ms, p99 ms, jobs claimed, wait p50 ms, p99 ms), the pin shaded.
# gnuplot -e "ck='...'; seed='...'; out='...png'; name='...'; clean=S; pin=S; total=S; rate=R" plot.gp
set terminal pngcairo size 1200,800 font ",10" noenhanced
set output out
set multiplot layout 2,2 title sprintf("held xmin horizon (%s) from %d s to %d s (shaded); %d jobs/s offered, 2 producers, 6 workers, each system alone", name, clean, clean + pin, rate)
set xrange [0:total]
set xlabel "seconds"
set grid
set key top right
set object 1 rect from clean, graph 0 to clean + pin, graph 1 fc rgb "#e8e8e8" fillstyle solid 1.0 noborder behind

set title "jobs completed per second (10 s windows)"
set ylabel "jobs/s"
set yrange [0:*]
plot ck using 1:2 with lines lw 2 lc rgb "#1f77b4" title "ck.claim + ck.complete", \
     seed using 1:2 with lines lw 2 lc rgb "#d62728" title "seed: SKIP LOCKED + DELETE", \
     rate with lines dt 2 lc rgb "#7f7f7f" title "offered"

set title "backlog"
set ylabel "jobs in the queue"
set yrange [0:*]
plot ck using 1:3 with lines lw 2 lc rgb "#1f77b4" title "ck", \
     seed using 1:3 with lines lw 2 lc rgb "#d62728" title "seed"

set title "claim-index pages read per index scan"
set ylabel "pages"
set logscale y
set yrange [*:*]
plot ck using 1:($9 > 0 ? $9 : NaN) with lines lw 2 lc rgb "#1f77b4" title "ck", \
     seed using 1:($9 > 0 ? $9 : NaN) with lines lw 2 lc rgb "#d62728" title "seed"

set title "p99 per 10 s: claim latency and wait from enqueue to claim"
set ylabel "ms"
plot ck using 1:14 with lines lw 2 lc rgb "#1f77b4" title "ck claim", \
     seed using 1:14 with lines lw 2 lc rgb "#d62728" title "seed claim", \
     ck using 1:17 with lines lw 2 dt 2 lc rgb "#1f77b4" title "ck wait", \
     seed using 1:17 with lines lw 2 dt 2 lc rgb "#d62728" title "seed wait"
unset multiplot
