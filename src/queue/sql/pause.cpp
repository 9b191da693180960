// ck.pause_queue and ck.resume_queue: the queue's owner stops and restarts its claims, or those
// of one concurrency key. The state is ck.queues.paused_at, or the key's row of ck.paused_keys
// (its jobs parked, rules/key_pause.hpp); signal/pause.hpp tells the claims in flight and waits
// for them.
#include "base/args.hpp"
#include "queue/engine/distributed.hpp"
#include "queue/signal/frontier.hpp"
#include "queue/signal/pause.hpp"
#include "queue/store/statements.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/syscache.h"
}

namespace {

// The arguments of both: a queue of this node (not distributed), owned by the caller (as
// ck.set_concurrency_limit asks: a member of the owning role). Returns the statement to run.
const ck::QueuePlan &owned_queue(FunctionCallInfo fcinfo, ck::QueueStatement kind, const char *call)
{
    ck::require_arg(fcinfo, 0, "queue");
    Oid queue = PG_GETARG_OID(0);
    const ck::QueuePlan &p = ck::queue_statement(kind, queue);   // raises unless a queue
    if (ck::queue_distribution(queue) != nullptr)
        throw ck::Error(ERRCODE_FEATURE_NOT_SUPPORTED,
                        ck::fmt("%s of a distributed queue is not supported: %s", call, p.qualified.c_str()), "",
                        "Each shard is a queue of its own on its worker; claims there do not see the coordinator's pause.");
    bool owner = ck::pg_call([&] {
        HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(queue));
        if (!HeapTupleIsValid(tuple))
            elog(ERROR, "cache lookup failed for relation %u", queue);
        Oid relowner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
        ReleaseSysCache(tuple);
        return has_privs_of_role(GetUserId(), relowner);
    });
    if (!owner)
        throw ck::Error(ERRCODE_INSUFFICIENT_PRIVILEGE, ck::fmt("must be owner of table %s", p.qualified.c_str()));
    return p;
}

// Runs the update; true when it changed the queue's state. (The update's invalidation drops p.)
bool run(const ck::QueuePlan &p, Oid queue, Datum key = 0)
{
    Datum values[2] = {ObjectIdGetDatum(queue), key};
    return ck::queue_execute(p, queue, values) == 1;
}

// The key's jobs parked, or settled under its limit again; and the queue's row touched, so that
// every backend reads its paused keys again with its claim's plan, once this commits. The jobs a
// resume unparks are back at their own run_at, maybe below the claim frontier: it starts over at
// the end (the settling's UPDATE runs inside our statement, so the queue's trigger leaves it).
void settle_key(Oid queue, Datum key)
{
    run(ck::queue_statement(ck::QueueStatement::KeySettle, queue), queue, key);
    run(ck::queue_statement(ck::QueueStatement::KeyTouch, queue), queue);
    ck::pg_call([&] { ck::frontier_reset_at_end(queue); });
}

} // namespace

// Pauses the queue's claims; false when it was paused already. Waits for the claims in flight
// (lock_timeout bounds the wait), so that no claim commits after this transaction does.
// With a key: its row of ck.paused_keys made, the claims in flight waited for (as for the queue;
// meanwhile the queue's claims return nothing), then its jobs parked.
CK_FUNCTION(ck_pause_queue)
{
    ck::spi_connect();
    Oid queue = PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0);
    bool keyed = !PG_ARGISNULL(1);
    Datum key = keyed ? PG_GETARG_DATUM(1) : 0;
    bool paused = run(owned_queue(fcinfo, keyed ? ck::QueueStatement::KeyPause : ck::QueueStatement::Pause, "ck.pause_queue"),
                      queue, key);
    if (paused)
        ck::pause_claims(queue);
    if (paused && keyed)
        settle_key(queue, key);
    ck::spi_finish();
    PG_RETURN_BOOL(paused);
}

// Resumes the queue's claims, or the key's (its jobs back under its limit); claim_wait callers
// wake at the commit. False when it was not paused.
CK_FUNCTION(ck_resume_queue)
{
    ck::spi_connect();
    Oid queue = PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0);
    bool keyed = !PG_ARGISNULL(1);
    Datum key = keyed ? PG_GETARG_DATUM(1) : 0;
    bool resumed = run(owned_queue(fcinfo, keyed ? ck::QueueStatement::KeyResume : ck::QueueStatement::Resume, "ck.resume_queue"),
                       queue, key);
    if (resumed && keyed)
        settle_key(queue, key);
    if (resumed)
        ck::wake_at_resume(queue);
    ck::spi_finish();
    PG_RETURN_BOOL(resumed);
}
