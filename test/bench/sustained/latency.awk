# make bench-sustained: reads a worker pgbench's transaction log (-l: client, transaction number, latency in µs,
# script, epoch seconds, µs) and prints, per 10 s window since t0 (epoch seconds, -v t0=...; -v width=S for windows
# of S seconds, as make bench-horizon does for a whole phase), the claims
# (odd-numbered transactions of each client: pgbench numbers them from 1, and each client's first is a claim: see
# work_ck.sql) and their p50 and p99 latency in ms, from a histogram of 2% wide bins.
{
    if ($2 % 2 != 1 || $3 <= 0) next
    x = $5 + $6 / 1e6 - t0
    if (x < 0) next
    w = int(x / width)
    b = int(log($3) / lb)
    h[w, b]++
    n[w]++
    if (w > last) last = w
    if (!(b in seen)) { seen[b] = 1; bins[++nb] = b }
}
BEGIN { lb = log(1.02); last = -1; if (width == "") width = 10 }
END {
    asort_bins()
    for (w = 0; w <= last; w++) {
        if (!n[w]) continue
        c = 0; p50 = p99 = ""
        for (i = 1; i <= nb; i++) {
            c += h[w, bins[i]]
            if (p50 == "" && c >= 0.50 * n[w]) p50 = exp((bins[i] + 0.5) * lb) / 1000
            if (p99 == "" && c >= 0.99 * n[w]) { p99 = exp((bins[i] + 0.5) * lb) / 1000; break }
        }
        printf "%d %d %.3f %.3f\n", w * width, n[w], p50, p99
    }
}
# insertion sort of the bins seen (a few hundred at most)
function asort_bins(   i, j, v) {
    for (i = 2; i <= nb; i++) {
        v = bins[i]
        for (j = i - 1; j >= 1 && bins[j] > v; j--) bins[j + 1] = bins[j]
        bins[j + 1] = v
    }
}
