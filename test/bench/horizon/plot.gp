# make bench-horizon: one variant on one major over time, a line per system and configuration of the library (the
# data files of run.sh: seconds, jobs/s, backlog, dead tuples, heap MB, index MB, autovacuum passes, claim-index
# scans, pages per scan, entries per scan, oldest xmin age, claims, claim p50 ms, p99 ms, jobs claimed, wait p50 ms,
# p99 ms), the pin shaded.
# gnuplot -e "dir='data/pgN'; variant='idle'; runs='ck_preload-on ck_preload-off seed_preload-on'; out='...png';
#             name='...'; clean=S; pin=S; total=S; rate=R" plot.gp
set terminal pngcairo size 1200,800 font ",10" noenhanced
set output out
set multiplot layout 2,2 title sprintf("held xmin horizon (%s) from %d s to %d s (shaded); %d jobs/s offered, 2 producers, 6 workers, each system alone", name, clean, clean + pin, rate)
set xrange [0:total]
set xlabel "seconds"
set grid
set key top right
set object 1 rect from clean, graph 0 to clean + pin, graph 1 fc rgb "#e8e8e8" fillstyle solid 1.0 noborder behind

file(r) = sprintf("%s/horizon_%s_%s.dat", dir, variant, r)
label(r) = (r eq "ck_preload-on" ? "ck.claim + ck.complete, preloaded" : \
            r eq "ck_preload-off" ? "ck.claim + ck.complete, not preloaded" : \
            r eq "seed_preload-on" ? "seed: SKIP LOCKED + DELETE, preloaded" : "seed: SKIP LOCKED + DELETE, not preloaded")
short(r) = (r eq "ck_preload-on" ? "ck, preloaded" : r eq "ck_preload-off" ? "ck, not preloaded" : \
            r eq "seed_preload-on" ? "seed, preloaded" : "seed, not preloaded")
color(r) = (r eq "ck_preload-on" ? "#1f77b4" : r eq "ck_preload-off" ? "#2ca02c" : \
            r eq "seed_preload-on" ? "#d62728" : "#ff7f0e")

set title "jobs completed per second (10 s windows)"
set ylabel "jobs/s"
set yrange [0:*]
plot for [r in runs] file(r) using 1:2 with lines lw 2 lc rgb color(r) title label(r), \
     rate with lines dt 2 lc rgb "#7f7f7f" title "offered"

set title "backlog"
set ylabel "jobs in the queue"
set yrange [0:*]
plot for [r in runs] file(r) using 1:3 with lines lw 2 lc rgb color(r) title short(r)

set title "claim-index pages read per index scan"
set ylabel "pages"
set logscale y
set yrange [*:*]
plot for [r in runs] file(r) using 1:($9 > 0 ? $9 : NaN) with lines lw 2 lc rgb color(r) title short(r)

set title "p99 per 10 s: claim latency (solid) and wait from enqueue to claim (dashed)"
set ylabel "ms"
plot for [r in runs] file(r) using 1:14 with lines lw 2 lc rgb color(r) title short(r) . " claim", \
     for [r in runs] file(r) using 1:17 with lines lw 2 dt 2 lc rgb color(r) title short(r) . " wait"
unset multiplot
