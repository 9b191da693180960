#!/usr/bin/env bash
# The hand-written hostile calls of test/chaos/hostile_calls.sql, for test/chaos/fuzz.sh:
#
#   bash test/chaos/fuzz_hostile.sh ROLE WORKDIR
#
# runs every call as ROLE (an existing role that is not a superuser) in a fresh copy of the
# sample database (test/chaos/fuzz_schema.sql), one session, and prints one unnumbered TAP
# line per call ("ok - SQLSTATE  call" / "not ok - ..."): the call must end as its
# "-- expect:" comment says, never in XX000 or a lost connection, and where it raised an
# error nothing may have changed (chaos_state(): every sample table, ck.queues,
# ck.lock_namespaces, the relations and constraints, this session's advisory locks and
# lock_timeout, statement_timeout and search_path). Lines without "-- expect:" are set-up.
#
# "-- expect:" takes: SQLSTATE[|SQLSTATE...] (an error with one of them), "ok" (no error),
# or "= VALUE" (no error, and the rows printed unaligned, "|" between fields, ";" between
# rows, empty rows left out, equal VALUE). The call line may hold several statements; the
# last error of the line is its SQLSTATE. "EXPECT; from N: EXPECT2" expects EXPECT2 from
# PostgreSQL N on (behaviour of the server's own that changed in that major).
set -euo pipefail

role=$1
work=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
db=ck_hostile
list=$here/hostile_calls.sql

su_sql() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
cleanup() {
    psql -X -q -At -d postgres -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                                    WHERE application_name = 'ck_hostile_other'" >/dev/null 2>&1 || true
    dropdb --if-exists --force "$db" >/dev/null 2>&1 || true
}
trap cleanup EXIT
cleanup

{
    createdb -O "$role" "$db"
    su_sql -d "$db" -v role="$role" -f "$here/fuzz_schema.sql"
    su_sql -d "$db" -v role="$role" <<'EOF'
-- What must not change when a call fails. Sequences are left out (nextval is not rolled back).
CREATE SCHEMA chaos;
GRANT USAGE ON SCHEMA chaos TO PUBLIC;
CREATE FUNCTION chaos.state() RETURNS text LANGUAGE sql VOLATILE AS $$
    SELECT pg_catalog.md5(pg_catalog.concat_ws('/',
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM public.stock AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM public.bookings AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM public.slots AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM public.orders AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM public.part AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM public.jobs AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM public.jobs_dead AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM public.mail AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM public.mail_dead AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM ck.queues AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM ck.lock_namespaces AS t),
        (SELECT pg_catalog.string_agg(c.oid::regclass::text || c.relkind::text || c.relnatts, ',' ORDER BY c.oid)
         FROM pg_catalog.pg_class AS c WHERE c.relnamespace IN ('public'::regnamespace, 'ck'::regnamespace)),
        (SELECT pg_catalog.string_agg(k.conname::text, ',' ORDER BY k.oid) FROM pg_catalog.pg_constraint AS k
         WHERE k.connamespace IN ('public'::regnamespace, 'ck'::regnamespace)),
        (SELECT pg_catalog.string_agg(h.ns || ':' || h.key || ':' || h.holds, ',' ORDER BY h.ns, h.key)
         FROM ck_internal.session_locks_held() AS h),
        (SELECT pg_catalog.string_agg(l.classid || ':' || l.objid || ':' || l.mode, ',' ORDER BY l.classid, l.objid)
         FROM pg_catalog.pg_locks AS l WHERE l.locktype = 'advisory' AND l.pid = pg_catalog.pg_backend_pid()),
        pg_catalog.current_setting('lock_timeout'), pg_catalog.current_setting('statement_timeout'),
        pg_catalog.current_setting('search_path')))
$$;
EOF
} >"$work/hostile_setup.log" 2>&1 || {
    echo "not ok - hostile calls: set-up failed"
    sed 's/^/# /' "$work/hostile_setup.log"
    exit 1
}

# Another session's temporary table and queue: a session that holds them and sleeps.
psql -X -q -At -d "$db" -U "$role" -v ON_ERROR_STOP=1 \
    -c "SET application_name = 'ck_hostile_other'" -c "SET statement_timeout = 0" \
    -c "CREATE TEMP TABLE other_tmp (id integer PRIMARY KEY, q4 integer NOT NULL DEFAULT 10, during tstzrange)" \
    -c "INSERT INTO other_tmp (id) VALUES (1)" \
    -c "SELECT ck.create_queue('pg_temp.other_q')" \
    -c "SELECT pg_advisory_lock(1, 77), pg_advisory_lock(77, 77)" \
    -c "SELECT pg_sleep(600)" >/dev/null 2>&1 &
other_tmp=
for _ in $(seq 1 100); do
    other_tmp=$(su_sql -d "$db" -c "SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                                    WHERE c.relname = 'other_q' AND c.relpersistence = 't'
                                      AND (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 77) = 2")
    [[ -z $other_tmp ]] || break
    sleep 0.1
done
if [[ -z $other_tmp ]]; then
    echo "not ok - hostile calls: another session's temporary table and locks were not made"
    exit 1
fi

# The driver: each call between markers, its SQLSTATE and whether the state changed after.
awk -v q="'" '
    BEGIN {
        print "\\set VERBOSITY sqlstate"
        print "\\set SHOW_CONTEXT never"
        print "\\pset format unaligned"
        print "\\pset tuples_only on"
        print "\\pset fieldsep |"
        print "\\pset null <NULL>"
        print "SET statement_timeout = " q "10s" q ";"
    }
    /^[ \t]*$/ || /^[ \t]*--/ { next }
    {
        i = index($0, "-- expect:")
        if (i == 0) { print; next }   # set-up
        n++
        call = substr($0, 1, i - 1)
        sub(/[ \t]+$/, "", call)
        spec = substr($0, i + 10)
        sub(/^[ \t]+/, "", spec)
        printf "%s\t%s\n", spec, call > (work "/hostile_cases.tsv")
        print "SELECT chaos.state() AS state_before \\gset"
        print "\\set LAST_ERROR_SQLSTATE 00000"
        print "\\echo @@call " n
        print call
        print "\\echo @@sqlstate " n " :LAST_ERROR_SQLSTATE"
        print "ROLLBACK;"
        print "SELECT " q "@@unchanged " n " " q " || (chaos.state() = :" q "state_before" q ");"
    }
' work="$work" "$list" >"$work/hostile_driver.sql"

status=0
psql -X -q -d "$db" -U "$role" -v ON_ERROR_STOP=0 -v other_tmp="$other_tmp.other_tmp" -v other_q="$other_tmp.other_q" \
    -v other_schema="$other_tmp" -f "$work/hostile_driver.sql" >"$work/hostile_run.out" 2>"$work/hostile_run.err" ||
    status=$?

# Judge each call.
server_major=$(psql -X -At -d "$db" -c "SELECT current_setting('server_version_num')::int / 10000")
python3 - "$work" "$status" "$server_major" <<'EOF'
import sys
work, status, server_major = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cases = [line.rstrip("\n").split("\t", 1) for line in open(work + "/hostile_cases.tsv")]
out, state, unchanged, current = {}, {}, {}, None
for line in open(work + "/hostile_run.out", errors="replace"):
    line = line.rstrip("\n")
    if line.startswith("@@call "):
        current = int(line.split()[1]); out[current] = []
    elif line.startswith("@@sqlstate "):
        _, n, code = line.split(" ", 2); state[int(n)] = code; current = None
    elif line.startswith("@@unchanged "):
        _, n, v = line.split(" ", 2); unchanged[int(n)] = v in ("t", "true")
    elif current is not None and line != "":
        out[current].append(line)
counts = {}
failed = 0
for i, (spec, call) in enumerate(cases, 1):
    code = state.get(i)
    got = ";".join(out.get(i, []))
    shown = call if len(call) <= 300 else call[:300] + "..."
    why = []
    parts = spec.split("; from ")
    spec = parts[0]
    for later in parts[1:]:
        since, alt = later.split(":", 1)
        if server_major >= int(since):
            spec = alt.strip()
    if code is None:
        code = "lost"
        why.append("no SQLSTATE: the session ended (crash?)")
    else:
        def fits(alt):
            alt = alt.strip()
            if alt.startswith("="):
                return code == "00000" and got == alt[1:].strip()
            if alt == "ok":
                return code == "00000"
            return code in alt.split("|")
        if not any(fits(alt) for alt in spec.split(" or ")):
            why.append("expected %s%s" % (spec, ", got " + got if code == "00000" else ""))
    if code == "XX000":
        why.append("internal error")
    if code not in ("00000", "lost") and not unchanged.get(i, False):
        why.append("the state changed although the call failed")
    counts[code] = counts.get(code, 0) + 1
    result = code if code != "00000" else ("= " + got if got else "ok")
    if len(result) > 80:
        result = result[:80] + "..."
    if why:
        failed += 1
        print("not ok - %s  %s  # %s" % (result, shown, "; ".join(why)))
    else:
        print("ok - %s  %s" % (result, shown))
print("# hostile calls: %d, %d failed; SQLSTATEs: %s" % (len(cases), failed,
      ", ".join("%s %d" % kv for kv in sorted(counts.items(), key=lambda kv: -kv[1]))))
if status != 0:
    print("# psql exit status %d" % status)
EOF
grep -v -E '^psql:.*(ERROR|WARNING|NOTICE):' "$work/hostile_run.err" | head -n 20 | sed 's/^/# stderr: /' || true
