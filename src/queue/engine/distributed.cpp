// Queues distributed over a Citus cluster: the coordinator sends each call to one shard.
// The shard of a distributed queue is a queue of its own on the worker that holds it (made so
// by ck.attach_queue_shard when ck.distribute_queue ran): its own triggers, claim frontier,
// unique index and ck.queues row there. A call on the coordinator runs the same ck function on
// the worker, the shard's name in place of the queue, inside one statement Citus routes to that
// shard by the distribution column (part = the shard's value; the count, one index probe,
// makes the one row the call hangs on):
//   SELECT r.* FROM (SELECT count(*) FROM queue WHERE part = $1 AND id = 0) AS s,
//                   LATERAL ck.f($2::regclass, $3, ...) AS r
// (Not "id IS NULL": PostgreSQL 17 folds that to false on a NOT NULL column, Citus then
// routes the statement nowhere and runs the call on the coordinator, where no shard is.)
// One round trip to one worker, inside the caller's transaction (Citus opens the remote one
// and commits it with ours). Citus's function call delegation would only take top-level
// calls from a client, not these.
// Which shard: a job's id names it (ids of shard i are i modulo the shard count, see
// ck.attach_queue_shard), a unique or concurrency key's hash names it (so that the shard's
// unique index and limits hold for the whole queue), other jobs go to the shards in turn.
#include "base/args.hpp"
#include "queue/engine/distributed.hpp"
#include "queue/engine/wait.hpp"
#include "queue/signal/wakeup.hpp"
#include "base/relation.hpp"
#include "base/spi.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "common/hashfn.h"
#include "funcapi.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
}


namespace ck {

namespace {

// The statements of this file (plan_cache.hpp).
enum class DistributedStatement : uint8_t {
    Lookup,   // a queue's row of ck.distributed_queues
    Of,       // the distribution of one queue, or none: cached per queue
    Call,     // a ck function run on one shard of a distributed queue (key_type: the function)
};

// The queue's row of ck.distributed_queues, if that table exists (a library newer than the
// installed SQL has none).
bool read_distribution(Oid queue, Distribution *into)
{
    bool exists = pg_call([] {
        Oid ck = get_namespace_oid("ck", true);
        return OidIsValid(ck) && OidIsValid(get_relname_relid("distributed_queues", ck));
    });
    if (!exists)
        return false;
    PlanKey key(DistributedStatement::Lookup, InvalidOid, InvalidOid, "", nullptr);
    const Prepared &p = prepare_once(key, [] {
        Prepared lookup;
        Oid types[1] = {REGCLASSOID};
        lookup.plan = pg_call([&] {
            return prepare_kept("SELECT parts, shards FROM ck.distributed_queues WHERE queue OPERATOR(pg_catalog.=) $1", 1,
                                types);
        });
        return lookup;
    });
    Datum values[1] = {ObjectIdGetDatum(queue)};
    if (execute_plan(p.plan, values, nullptr, Snap::ReadOnly) == 0)
        return false;
    struct Read {
        Datum *parts;
        char **shards;
        int n;
    };
    Read read = pg_call([&] {
        bool isnull;
        Datum *parts, *shards;
        int nparts, nshards;
        deconstruct_array(DatumGetArrayTypeP(result_datum(0, 1, &isnull)), INT4OID, sizeof(int32), true, TYPALIGN_INT,
                          &parts, nullptr, &nparts);
        deconstruct_array(DatumGetArrayTypeP(result_datum(0, 2, &isnull)), TEXTOID, -1, false, TYPALIGN_INT, &shards,
                          nullptr, &nshards);
        if (nparts != nshards || nparts == 0)
            ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                            errmsg("ck.distributed_queues has %d parts and %d shards for one queue", nparts, nshards)));
        char **names = static_cast<char **>(palloc(sizeof(char *) * nshards));
        for (int i = 0; i < nshards; i++)
            names[i] = TextDatumGetCString(shards[i]);
        return Read{parts, names, nparts};
    });
    for (int i = 0; i < read.n; i++) {
        into->parts.push_back(DatumGetInt32(read.parts[i]));
        into->shards.push_back(read.shards[i]);
    }
    into->next_shard = static_cast<size_t>(MyProcPid) % into->parts.size();   // claimers start spread out
    return true;
}

// The statement that runs ck function fn on one shard of the queue d: $1 the shard's part, $2
// its name, then fn's arguments after the queue.
const Prepared &shard_call(const Distribution &d, Oid queue, Oid fn)
{
    PlanKey key(DistributedStatement::Call, queue, fn, "", nullptr);
    return prepare_once(key, [&] {
        Prepared p;
        p.plan = pg_call([&] {
            HeapTuple tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
            if (!HeapTupleIsValid(tuple))
                elog(ERROR, "cache lookup failed for function %u", fn);
            Form_pg_proc proc = reinterpret_cast<Form_pg_proc>(GETSTRUCT(tuple));
            int nargs = proc->pronargs;
            Oid *types = static_cast<Oid *>(palloc(sizeof(Oid) * (nargs + 1)));
            types[0] = INT4OID;
            types[1] = TEXTOID;
            StringInfoData sql;
            initStringInfo(&sql);
            appendStringInfo(&sql,
                             "SELECT r.* FROM (SELECT pg_catalog.count(*) FROM %s WHERE part OPERATOR(pg_catalog.=) $1 "
                             "AND id OPERATOR(pg_catalog.=) 0) AS s, LATERAL %s($2::pg_catalog.regclass",
                             table_ref(queue).sql, quote_qualified_identifier("ck", NameStr(proc->proname)));
            for (int i = 1; i < nargs; i++) {
                types[i + 1] = proc->proargtypes.values[i];
                appendStringInfo(&sql, ", $%d", i + 2);
            }
            appendStringInfoString(&sql, ") AS r");
            ReleaseSysCache(tuple);
            return prepare_kept(sql.data, nargs + 1, types);
        });
        return p;
    });
}

// Runs fn on shard `shard` of d with args (fn's arguments after the queue; nargs of them).
// The rows are in SPI_tuptable; returns their count.
uint64 run_on_shard(const Distribution &d, Oid queue, Oid fn, size_t shard, const Datum *args, const bool *nulls, int nargs)
{
    const Prepared &p = shard_call(d, queue, fn);
    Datum values[FUNC_MAX_ARGS + 1];
    char flags[FUNC_MAX_ARGS + 1];
    values[0] = Int32GetDatum(d.parts[shard]);
    values[1] = pg_call([&] { return PointerGetDatum(cstring_to_text(d.shards[shard].c_str())); });
    flags[0] = flags[1] = ' ';
    for (int i = 0; i < nargs; i++) {
        values[i + 2] = args[i];
        flags[i + 2] = nulls[i] ? 'n' : ' ';
    }
    return execute_plan(p.plan, values, flags);
}

// The same with the caller's own arguments.
uint64 run_call_on_shard(FunctionCallInfo fcinfo, const Distribution &d, size_t shard)
{
    Datum args[FUNC_MAX_ARGS];
    bool nulls[FUNC_MAX_ARGS];
    for (int i = 1; i < PG_NARGS(); i++) {
        args[i - 1] = fcinfo->args[i].value;
        nulls[i - 1] = fcinfo->args[i].isnull;
    }
    return run_on_shard(d, PG_GETARG_OID(0), fcinfo->flinfo->fn_oid, shard, args, nulls, PG_NARGS() - 1);
}

// What the function returns, from the one row the shard returned: a record, or the value
// (copied out of SPI's memory, which spi_finish frees).
Datum return_row(FunctionCallInfo fcinfo)
{
    return pg_call([&] {
        if (SPI_processed != 1)
            elog(ERROR, "a call on a shard returned " UINT64_FORMAT " rows, not one", SPI_processed);
        TupleDesc desc;
        if (get_call_result_type(fcinfo, nullptr, &desc) == TYPEFUNC_COMPOSITE)
            return PointerGetDatum(SPI_returntuple(SPI_tuptable->vals[0], BlessTupleDesc(desc)));
        bool isnull;
        Datum value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
        fcinfo->isnull = isnull;
        if (isnull)
            return (Datum) 0;
        int16 typlen;
        bool typbyval;
        get_typlenbyval(SPI_gettypeid(SPI_tuptable->tupdesc, 1), &typlen, &typbyval);
        return SPI_datumTransfer(value, typbyval, typlen);
    });
}

size_t shard_of_id(const Distribution &d, int64 id)
{
    int64 n = static_cast<int64>(d.parts.size());
    return static_cast<size_t>((id % n + n) % n);
}

Oid ck_function(const char *name, std::initializer_list<Oid> args)
{
    return pg_call([&] {
        List *qualified = list_make2(makeString(pstrdup("ck")), makeString(pstrdup(name)));
        Oid types[FUNC_MAX_ARGS];
        int n = 0;
        for (Oid a : args)
            types[n++] = a;
        return LookupFuncName(qualified, n, types, false);
    });
}

// Claims up to batch jobs into out: from the shard that last gave this backend work, then,
// only while they come back short, from the next ones, once around at most (skipping `skip`,
// a shard just claimed from). Returns how many.
uint64 claim_round(const Distribution &d, Oid queue, int32 batch, Interval *lease, ReturnSetInfo *out,
                   size_t skip = SIZE_MAX)
{
    Oid claim = ck_function("claim", {REGCLASSOID, INT4OID, INTERVALOID});
    size_t n = d.parts.size();
    uint64 got = 0;
    for (size_t k = 0; k < n && got < static_cast<uint64>(batch); k++) {
        size_t shard = (d.next_shard + k) % n;
        if (shard == skip)
            continue;
        int32 want = batch - static_cast<int32>(got);
        Datum args[2] = {Int32GetDatum(want), PointerGetDatum(lease)};
        bool nulls[2] = {false, lease == nullptr};
        uint64 rows = run_on_shard(d, queue, claim, shard, args, nulls, 2);
        pg_call([&] { append_result_rows(out); });
        got += rows;
        if (rows == static_cast<uint64>(want)) {
            d.next_shard = shard;   // it had work: the next claim starts there
            return got;
        }
    }
    d.next_shard = (d.next_shard + 1) % n;   // every shard ran short: the next claim starts one further
    return got;
}

uint32 key_hash(Datum key)
{
    return pg_call([&] {
        text *t = DatumGetTextPP(key);
        return hash_bytes(reinterpret_cast<const unsigned char *>(VARDATA_ANY(t)), VARSIZE_ANY_EXHDR(t));
    });
}

size_t enqueues = 0;

} // namespace

const Distribution *queue_distribution(Oid queue)
{
    PlanKey key(DistributedStatement::Of, queue, InvalidOid, "", nullptr);
    const Distribution &p = prepare_once<Distribution>(key, [&] {
        Distribution d;
        read_distribution(queue, &d);
        return d;
    });
    return p.parts.empty() ? nullptr : &p;
}

namespace {

Datum distributed_by_id(FunctionCallInfo fcinfo, const Distribution &d)
{
    require_arg(fcinfo, 1, "id");
    run_call_on_shard(fcinfo, d, shard_of_id(d, PG_GETARG_INT64(1)));
    return return_row(fcinfo);
}

Datum distributed_enqueue(FunctionCallInfo fcinfo, const Distribution &d, int key_argno, int concurrency_argno, int after_argno)
{
    bool keyed = !PG_ARGISNULL(key_argno);
    bool limited = PG_NARGS() > concurrency_argno && !PG_ARGISNULL(concurrency_argno);
    if (after_argno >= 0 && PG_NARGS() > after_argno && !PG_ARGISNULL(after_argno))
        throw Error(ERRCODE_FEATURE_NOT_SUPPORTED, "a distributed queue has no dependencies between jobs",
                    "The jobs a job waits for may be on other shards.", "Enqueue the job once those jobs are done.");
    if (keyed && limited)
        throw Error(ERRCODE_FEATURE_NOT_SUPPORTED,
                    "a job of a distributed queue takes a unique key or a concurrency key, not both",
                    "Each key is kept on the shard its hash names, and the two may name different shards.");
    size_t n = d.parts.size();
    size_t shard = keyed    ? key_hash(PG_GETARG_DATUM(key_argno)) % n
                   : limited ? key_hash(PG_GETARG_DATUM(concurrency_argno)) % n
                             : (enqueues++ + static_cast<size_t>(MyProcPid)) % n;   // backends start spread out
    run_call_on_shard(fcinfo, d, shard);
    // The shard's trigger wakes waiters on its worker; those of the coordinator wake here.
    pg_call([&] { queue_mark_ready(PG_GETARG_OID(0)); });
    return return_row(fcinfo);
}

Datum distributed_claim(FunctionCallInfo fcinfo, const Distribution &d, int32 batch, Interval *lease, ReturnSetInfo *out)
{
    claim_round(d, PG_GETARG_OID(0), batch, lease, out);
    return (Datum) 0;
}

// Sleeps on the queue's condition variable, which enqueues through this coordinator broadcast
// on; jobs that come due on a worker (a schedule, a retry, a lease end) are seen by the look
// after each nap of at most a second (polling every 10 to 200 ms without the library preloaded).
Datum distributed_claim_wait(FunctionCallInfo fcinfo, const Distribution &d, int32 batch, Interval *lease,
                             TimestampTz deadline, ReturnSetInfo *out)
{
    Oid queue = PG_GETARG_OID(0);
    // d stays in use across the naps: no sweep (it could free d).
    wait_for_jobs(queue, WakeOn::Ready, deadline, false, [&] { return claim_round(d, queue, batch, lease, out) > 0; },
                  [](TimestampTz now) { return now + USECS_PER_SEC; });
    return (Datum) 0;
}

// The completion and the first claim in one call on the job's shard; other shards only when
// that one comes back short.
Datum distributed_complete_and_claim(FunctionCallInfo fcinfo, const Distribution &d, int32 batch, Interval *lease,
                                     ReturnSetInfo *out)
{
    require_arg(fcinfo, 1, "id");
    size_t shard = shard_of_id(d, PG_GETARG_INT64(1));
    uint64 got = run_call_on_shard(fcinfo, d, shard);
    pg_call([&] { append_result_rows(out); });
    if (got < static_cast<uint64>(batch))
        claim_round(d, PG_GETARG_OID(0), batch - static_cast<int32>(got), lease, out, shard);
    return (Datum) 0;
}

Datum distributed_complete_many(FunctionCallInfo fcinfo, const Distribution &d)
{
    Oid queue = PG_GETARG_OID(0);
    ReturnSetInfo *out = pg_call([&] { return begin_result_set(fcinfo); });
    size_t n = d.parts.size();
    struct Pairs {
        Datum *ids;
        Datum *tokens;
        int count;
    };
    Pairs pairs = pg_call([&] {
        Pairs p{};
        deconstruct_array(PG_GETARG_ARRAYTYPE_P(1), INT8OID, sizeof(int64), true, TYPALIGN_DOUBLE, &p.ids, nullptr, &p.count);
        int tokens;
        deconstruct_array(PG_GETARG_ARRAYTYPE_P(2), INT8OID, sizeof(int64), true, TYPALIGN_DOUBLE, &p.tokens, nullptr, &tokens);
        return p;
    });
    for (size_t shard = 0; shard < n; shard++) {
        // The 1.1.0 overload's results (a third array) are not sent: a distributed queue keeps no
        // history (ck.set_history refuses it), where results are kept.
        Datum args[3] = {0, 0, 0};
        bool nulls[3] = {false, false, true};
        bool any = pg_call([&] {
            Datum *ids = static_cast<Datum *>(palloc(sizeof(Datum) * (pairs.count + 1)));
            Datum *tokens = static_cast<Datum *>(palloc(sizeof(Datum) * (pairs.count + 1)));
            int m = 0;
            for (int i = 0; i < pairs.count; i++)
                if (shard_of_id(d, DatumGetInt64(pairs.ids[i])) == shard) {
                    ids[m] = pairs.ids[i];
                    tokens[m++] = pairs.tokens[i];
                }
            args[0] = PointerGetDatum(construct_array(ids, m, INT8OID, sizeof(int64), true, TYPALIGN_DOUBLE));
            args[1] = PointerGetDatum(construct_array(tokens, m, INT8OID, sizeof(int64), true, TYPALIGN_DOUBLE));
            return m > 0;
        });
        if (!any)
            continue;
        run_on_shard(d, queue, fcinfo->flinfo->fn_oid, shard, args, nulls, PG_NARGS() - 1);
        pg_call([&] { append_result_rows(out); });
    }
    return (Datum) 0;
}

// Counts summed over the shards; the oldest ready job is the oldest of any shard, and ready
// is estimated when it is on any shard.
Datum distributed_stats(FunctionCallInfo fcinfo, const Distribution &d)
{
    int64 counts[5] = {0, 0, 0, 0, 0};
    Interval oldest{};
    bool any_oldest = false;
    bool estimated = false;
    bool paused = false;
    for (size_t shard = 0; shard < d.parts.size(); shard++) {
        run_call_on_shard(fcinfo, d, shard);
        pg_call([&] {
            bool isnull;
            for (int c = 0; c < 5; c++) {
                Datum v = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, c + 1, &isnull);
                counts[c] += isnull ? 0 : DatumGetInt64(v);
            }
            Datum age = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 6, &isnull);
            if (!isnull && (!any_oldest || DatumGetBool(DirectFunctionCall2(interval_gt, age, IntervalPGetDatum(&oldest))))) {
                oldest = *DatumGetIntervalP(age);
                any_oldest = true;
            }
            Datum est = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 7, &isnull);
            estimated = estimated || (!isnull && DatumGetBool(est));
            if (SPI_tuptable->tupdesc->natts >= 8) {   // 1.1.0: paused
                Datum p = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 8, &isnull);
                paused = paused || (!isnull && DatumGetBool(p));
            }
        });
    }
    return pg_call([&] {
        TupleDesc desc;
        if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
            elog(ERROR, "return type must be a row type");
        Datum values[8];   // the last one, paused, only where the extension is 1.1.0 (desc says)
        bool nulls[8] = {false, false, false, false, false, !any_oldest, false, false};
        for (int c = 0; c < 5; c++)
            values[c] = Int64GetDatum(counts[c]);
        Interval *age = static_cast<Interval *>(palloc(sizeof(Interval)));
        *age = oldest;
        values[5] = IntervalPGetDatum(age);
        values[6] = BoolGetDatum(estimated);
        values[7] = BoolGetDatum(paused);
        return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls));
    });
}

Datum distributed_every_shard_count(FunctionCallInfo fcinfo, const Distribution &d)
{
    int64 count = 0;
    for (size_t shard = 0; shard < d.parts.size(); shard++) {
        run_call_on_shard(fcinfo, d, shard);
        bool isnull;
        count += DatumGetInt64(result_datum(0, 1, &isnull));
    }
    PG_RETURN_INT64(count);
}

} // namespace

Datum distributed_call(FunctionCallInfo fcinfo, const Distribution &d, const Route &r)
{
    switch (r.kind) {
    case Route::Kind::ById:
        return distributed_by_id(fcinfo, d);
    case Route::Kind::Enqueue:
        return distributed_enqueue(fcinfo, d, r.key_argno, r.concurrency_argno, r.after_argno);
    case Route::Kind::Claim:
        return distributed_claim(fcinfo, d, r.batch, r.lease, r.out);
    case Route::Kind::ClaimWait:
        return distributed_claim_wait(fcinfo, d, r.batch, r.lease, r.deadline, r.out);
    case Route::Kind::CompleteAndClaim:
        return distributed_complete_and_claim(fcinfo, d, r.batch, r.lease, r.out);
    case Route::Kind::CompleteMany:
        return distributed_complete_many(fcinfo, d);
    case Route::Kind::Stats:
        return distributed_stats(fcinfo, d);
    case Route::Kind::EveryShardCount:
        return distributed_every_shard_count(fcinfo, d);
    }
    return (Datum) 0;
}

} // namespace ck
