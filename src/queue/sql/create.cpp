// ck.create_queue and ck.adopt_queue: a queue is an ordinary table plus its dead-letter table,
// its indexes and triggers, and its row in ck.queues (ck.drop_queue is SQL). Also the trigger
// that drops cached plans when a row of ck.queues changes.
#include "base/args.hpp"
#include "queue/signal/frontier.hpp"
#include "base/spi.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "commands/comment.h"
#include "commands/defrem.h"
#include "commands/trigger.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "utils/inval.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
}

namespace {

// Where the queue goes: the caller's schema for an unqualified name, as CREATE TABLE does.
struct Placement {
    const char *schema;
    const char *table;
    const char *dead;            // a free name for the dead-letter table
};

Placement place(const char *queue)
{
    return ck::pg_call([&] {
#if PG_VERSION_NUM >= 160000
        List *names = stringToQualifiedNameList(queue, NULL);
#else
        List *names = stringToQualifiedNameList(queue);
#endif
        RangeVar *rv = makeRangeVarFromNameList(names);
        if (rv->relpersistence == RELPERSISTENCE_TEMP || rv->catalogname != nullptr)
            ereport(ERROR, (errcode(ERRCODE_INVALID_NAME), errmsg("invalid queue name \"%s\"", queue)));
        Oid nsp = RangeVarGetCreationNamespace(rv);
        if (OidIsValid(get_relname_relid(rv->relname, nsp)))
            ereport(ERROR, (errcode(ERRCODE_DUPLICATE_TABLE),
                            errmsg("a relation named \"%s\" already exists in schema \"%s\"", rv->relname,
                                   get_namespace_name(nsp)),
                            errhint("Pick another name for the queue.")));
        Placement p;
        p.schema = get_namespace_name(nsp);
        p.table = rv->relname;
        p.dead = ChooseRelationName(rv->relname, nullptr, "dead", nsp, false);
        return p;
    });
}

const char *qualified(const char *schema, const char *name)
{
    return ck::pg_call([&] { return quote_qualified_identifier(schema, name); });
}

// The trigger function <name>() as the installed version of the extension has it, schema-
// qualified: in ck_internal from 1.0.0 on, in ck before (the library may be newer than the SQL
// objects until ALTER EXTENSION ... UPDATE); empty when that version has none.
std::string trigger_function(const char *name)
{
    const char *found = ck::pg_call([&]() -> const char * {
        for (const char *schema : {"ck_internal", "ck"}) {
            if (!OidIsValid(get_namespace_oid(schema, true)))
                continue;
            List *qualified = list_make2(makeString(pstrdup(schema)), makeString(pstrdup(name)));
            if (OidIsValid(LookupFuncName(qualified, 0, nullptr, true)))
                return quote_qualified_identifier(schema, name);
        }
        return nullptr;
    });
    return found != nullptr ? std::string(found) + "()" : std::string();
}

// The triggers every queue carries (those its installed version has), and ck_notify with
// notify, each unless the queue relid (q) has a trigger of that name already.
void create_triggers(const std::string &q, Oid relid, bool notify)
{
    struct Trigger {
        const char *name;
        const char *function;
        const char *event;   // before the table's name
        const char *scope;   // after it
    };
    // Waiters in ck.claim_wait wake when a statement that inserted jobs commits, and the claim
    // frontier learns the jobs' keys from the transition table (from 0.2.2 on). Plain UPDATEs and
    // DELETEs of jobs make the claim frontier start over. A job that others wait for records its
    // departure (rules/dependencies.cpp); the WHEN keeps every other job's delete free of it
    // (from 0.3.1 on). (The trigger that hands on the slots of limited concurrency keys, ck_left,
    // comes with the queue's first limit: a queue without limits pays nothing for it. See
    // ck.set_concurrency_limit.)
    const Trigger triggers[] = {
        {"ck_ready", "queue_ready", "AFTER INSERT", "REFERENCING NEW TABLE AS ck_new FOR EACH STATEMENT"},
        {"ck_changed", "queue_changed", "BEFORE UPDATE OR DELETE", "FOR EACH STATEMENT"},
        {"ck_dependency_left", "queue_dependency_left", "AFTER DELETE", "FOR EACH ROW WHEN (OLD.has_dependants)"},
        {"ck_notify", "notify_queue", "AFTER INSERT", "FOR EACH STATEMENT"},
    };
    for (const Trigger &t : triggers) {
        if (strcmp(t.name, "ck_notify") == 0 && !notify)
            continue;
        std::string function = trigger_function(t.function);
        bool exists = ck::pg_call([&] { return OidIsValid(get_trigger_oid(relid, t.name, true)); });
        if (function.empty() || exists)
            continue;
        ck::execute_sql(("CREATE TRIGGER " + std::string(t.name) + " " + t.event + " ON " + q + " " + t.scope +
                         " EXECUTE FUNCTION " + function).c_str());
    }
}

// An index a queue or its dead letters need: its columns, as pg_index lists them.
struct Index {
    const char *columns;
    const char *where;   // nullptr: not partial
    bool unique;
};

// The claim reads the (priority, run_at, id) index in order; leased jobs by lease end; at most
// one job per unique key in the queue (engine/enqueue.cpp); jobs parked behind their concurrency
// key's limit, oldest first (rules/limits.cpp).
constexpr Index queue_indexes[] = {
    {"priority, run_at, id", nullptr, false},
    {"run_at", "lease_token IS NOT NULL", false},
    {"unique_key", "unique_key IS NOT NULL", true},
    {"concurrency_key, priority, parked_run_at, id", "parked_run_at IS NOT NULL", false},
    {nullptr, nullptr, false},
};
constexpr Index dead_indexes[] = {
    {"died_at", nullptr, false},
    {nullptr, nullptr, false},
};

// Makes each index of the list that table relid (q) has not on those columns.
void create_indexes(const std::string &q, Oid relid, const Index *indexes)
{
    for (const Index *i = indexes; i->columns != nullptr; i++) {
        bool exists = ck::pg_call([&] {
            Oid types[3] = {OIDOID, TEXTOID, BOOLOID};
            Datum values[3] = {ObjectIdGetDatum(relid), CStringGetTextDatum(i->columns), BoolGetDatum(i->unique)};
            int rc = SPI_execute_with_args(
                "SELECT FROM pg_catalog.pg_index AS x WHERE x.indrelid OPERATOR(pg_catalog.=) $1"
                " AND x.indisunique OPERATOR(pg_catalog.=) $3 AND $2 OPERATOR(pg_catalog.=) ("
                "SELECT pg_catalog.string_agg(a.attname::pg_catalog.text, ', ' ORDER BY k.n)"
                " FROM pg_catalog.unnest(x.indkey::pg_catalog.int2[]) WITH ORDINALITY AS k(attnum, n)"
                " JOIN pg_catalog.pg_attribute AS a ON a.attrelid OPERATOR(pg_catalog.=) x.indrelid"
                " AND a.attnum OPERATOR(pg_catalog.=) k.attnum)",
                3, types, values, nullptr, false, 1);
            if (rc != SPI_OK_SELECT)
                elog(ERROR, "could not read the indexes of %s: %s", q.c_str(), SPI_result_code_string(rc));
            return SPI_processed > 0;
        });
        if (!exists)
            ck::execute_sql((std::string(i->unique ? "CREATE UNIQUE INDEX ON " : "CREATE INDEX ON ") + q + " (" +
                             i->columns + ")" + (i->where ? std::string(" WHERE ") + i->where : "")).c_str());
    }
}

void create_dead_letters(const std::string &dead)
{
    ck::execute_sql(("CREATE TABLE " + dead + " ("
                     "id bigint PRIMARY KEY, "
                     "job pg_catalog.jsonb NOT NULL, "
                     "attempts integer NOT NULL, "
                     "last_error pg_catalog.text, "
                     "died_at timestamp with time zone NOT NULL DEFAULT pg_catalog.now())")
                        .c_str());
}

// The queue's row in ck.queues.
void register_queue(const std::string &q, Oid relid, Oid dead_relid, Datum lease, int32 max_attempts, bool notify)
{
    ck::pg_call([&] {
        Oid types[5] = {REGCLASSOID, REGCLASSOID, INTERVALOID, INT4OID, BOOLOID};
        Datum values[5] = {ObjectIdGetDatum(relid), ObjectIdGetDatum(dead_relid), lease,
                           Int32GetDatum(max_attempts), BoolGetDatum(notify)};
        int rc = SPI_execute_with_args(
            "INSERT INTO ck.queues (queue, dead_letters, lease, max_attempts, notify) VALUES ($1, $2, $3, $4, $5)",
            5, types, values, nullptr, false, 0);
        if (rc != SPI_OK_INSERT)
            elog(ERROR, "could not register queue: %s", SPI_result_code_string(rc));
        // A queue whose claims cannot start at a frontier walks the dead entries a held xmin
        // horizon keeps: say so now, not when a long transaction slows every claim. (Not for
        // this transaction's own isolation level: the workers' is what counts.)
        ck::ClaimPath path = ck::frontier_path(relid);
        if (strcmp(path.path, "full") == 0 && !IsolationUsesXactSnapshot())
            ereport(NOTICE, (errmsg("claims of queue %s will read its whole claim index, dead entries included", q.c_str()),
                             errdetail("%s.", path.reason), errhint("ck.claim_path(queue) tells which way claims go.")));
    });
}

// The arguments create_queue and adopt_queue share: max_attempts (argno 2), checked.
int32 max_attempts_arg(FunctionCallInfo fcinfo)
{
    int32 max_attempts = PG_GETARG_INT32(2);
    if (max_attempts < 1 || max_attempts > 1000)
        throw ck::Error(ERRCODE_INVALID_PARAMETER_VALUE,
                        ck::fmt("max_attempts must be between 1 and 1000, got %d", max_attempts));
    return max_attempts;
}

// Runs sql (with $1 the queue) and returns how many rows it changed.
uint64 run_on_queue(const std::string &sql, Oid relid)
{
    return ck::pg_call([&] {
        Oid types[1] = {REGCLASSOID};
        Datum values[1] = {ObjectIdGetDatum(relid)};
        int rc = SPI_execute_with_args(sql.c_str(), 1, types, values, nullptr, false, 0);
        if (rc < 0)
            elog(ERROR, "could not run \"%s\": %s", sql.c_str(), SPI_result_code_string(rc));
        return static_cast<uint64>(SPI_processed);
    });
}

// Raises 42P16 naming the first of columns (nullptr-terminated) that table relid lacks.
void require_columns(Oid relid, const char *what, const char *const *columns)
{
    for (const char *const *c = columns; *c != nullptr; c++)
        if (ck::pg_call([&] { return get_attnum(relid, *c) == InvalidAttrNumber; }))
            throw ck::Error(ERRCODE_INVALID_TABLE_DEFINITION,
                            ck::fmt("%s has no column \"%s\"", what, *c),
                            "ck.adopt_queue takes back a table that ck.create_queue made.",
                            "ck.create_queue makes a new queue.");
}

} // namespace

CK_FUNCTION(ck_create_queue)
{
    static const char *const arg_names[] = {"queue", "lease", "max_attempts", "notify"};
    for (int i = 0; i < 4; i++)
        ck::require_arg(fcinfo, i, arg_names[i]);
    const char *queue = text_to_cstring(PG_GETARG_TEXT_PP(0));
    int32 max_attempts = max_attempts_arg(fcinfo);
    bool notify = PG_GETARG_BOOL(3);
    if (queue[0] == '\0')
        throw ck::Error(ERRCODE_INVALID_NAME, "queue name must not be empty");
    Datum lease = IntervalPGetDatum(ck::lease_arg(fcinfo, 1));

    Placement at = place(queue);
    std::string q = qualified(at.schema, at.table);
    std::string dead = qualified(at.schema, at.dead);
    std::string channel = std::string(at.schema) + "." + at.table;
    if (notify && channel.size() >= NAMEDATALEN)
        throw ck::Error(ERRCODE_NAME_TOO_LONG,
                        ck::fmt("notify channel \"%s\" is longer than %d bytes", channel.c_str(), NAMEDATALEN - 1),
                        "", "Use a shorter schema or queue name, or notify => false.");

    ck::spi_connect();
    // Jobs: run_at is when a job may next be claimed (its schedule, then its lease end, then
    // its retry time); the claim reads the (priority, run_at, id) index in order.
    ck::execute_sql(("CREATE TABLE " + q + " ("
                     "id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, "
                     "payload pg_catalog.jsonb NOT NULL DEFAULT '{}', "
                     "priority integer NOT NULL DEFAULT 0, "
                     "run_at timestamp with time zone NOT NULL DEFAULT pg_catalog.now(), "
                     "attempts integer NOT NULL DEFAULT 0, "
                     "lease_token bigint, "
                     "enqueued_at timestamp with time zone NOT NULL DEFAULT pg_catalog.now(), "
                     "last_error pg_catalog.text, "
                     "unique_key pg_catalog.text, "
                     "concurrency_key pg_catalog.text, "
                     "parked_run_at timestamp with time zone, "
                     "waiting_for integer, "
                     "has_dependants boolean, "
                     "timeout_at timestamp with time zone) "
                     "WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02)")
                        .c_str());
    create_dead_letters(dead);
    ck::execute_sql(("COMMENT ON TABLE " + q + " IS 'concurrency_kit queue; dead letters in " +
                     at.dead + "'").c_str());
    Oid relid = ck::pg_call([&] { return get_relname_relid(at.table, get_namespace_oid(at.schema, false)); });
    Oid dead_relid = ck::pg_call([&] { return get_relname_relid(at.dead, get_namespace_oid(at.schema, false)); });
    create_indexes(q, relid, queue_indexes);
    create_indexes(dead, dead_relid, dead_indexes);
    create_triggers(q, relid, notify);
    register_queue(q, relid, dead_relid, lease, max_attempts, notify);
    ck::spi_finish();
    PG_RETURN_OID(relid);
}

// ck.adopt_queue(queue, lease, max_attempts, notify): a queue table left unregistered by DROP
// EXTENSION concurrency_kit CASCADE and CREATE EXTENSION made a queue again. What the dropped
// extension kept in its own tables is gone (limits, unique windows, dependencies, the lease token
// sequence), so the jobs are put where the queue without them expects them: leases held then are
// lost, parked jobs are ready, jobs waiting for dependencies are buried.
CK_FUNCTION(ck_adopt_queue)
{
    static const char *const arg_names[] = {"queue", "lease", "max_attempts", "notify"};
    for (int i = 0; i < 4; i++)
        ck::require_arg(fcinfo, i, arg_names[i]);
    Oid relid = PG_GETARG_OID(0);
    Datum lease = IntervalPGetDatum(ck::lease_arg(fcinfo, 1));
    int32 max_attempts = max_attempts_arg(fcinfo);
    bool notify = PG_GETARG_BOOL(3);
    struct Table {
        char relkind;
        bool owner;
        const char *schema;
        const char *name;
        const char *comment;
    };
    Table t = ck::pg_call([&] {
        Table table{get_rel_relkind(relid), false, nullptr, nullptr, nullptr};
        if (table.relkind == '\0')
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("relation with OID %u does not exist", relid)));
        HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
        if (!HeapTupleIsValid(tuple))
            elog(ERROR, "cache lookup failed for relation %u", relid);
        table.owner = has_privs_of_role(GetUserId(), reinterpret_cast<Form_pg_class>(GETSTRUCT(tuple))->relowner);
        ReleaseSysCache(tuple);
        table.schema = get_namespace_name(get_rel_namespace(relid));
        table.name = get_rel_name(relid);
        table.comment = GetComment(relid, RelationRelationId, 0);
        return table;
    });
    std::string q = qualified(t.schema, t.name);
    if (t.relkind != RELKIND_RELATION)
        throw ck::Error(ERRCODE_WRONG_OBJECT_TYPE, ck::fmt("%s is not a table", q.c_str()));
    if (!t.owner)
        throw ck::Error(ERRCODE_INSUFFICIENT_PRIVILEGE, ck::fmt("must be owner of table %s", q.c_str()));
    static const char *const job_columns[] = {"id", "payload", "priority", "run_at", "attempts", "lease_token",
                                              "enqueued_at", "last_error", "unique_key", "concurrency_key",
                                              "parked_run_at", "waiting_for", "has_dependants", nullptr};
    static const char *const dead_columns[] = {"id", "job", "attempts", "last_error", "died_at", nullptr};
    require_columns(relid, ck::fmt("table %s", q.c_str()).c_str(), job_columns);

    ck::spi_connect();
    if (run_on_queue("SELECT FROM ck.queues WHERE queue OPERATOR(pg_catalog.=) $1", relid) > 0)
        throw ck::Error(ERRCODE_DUPLICATE_OBJECT, ck::fmt("table %s is already a queue", q.c_str()));
    // A table a 1.0 library made has no column for job timeouts (1.1.0): nullable, nothing rewritten.
    ck::execute_sql(("ALTER TABLE " + q + " ADD COLUMN IF NOT EXISTS timeout_at timestamp with time zone").c_str());
    // The dead letters: the table create_queue named in the queue's comment, else the name it
    // gives a dead-letter table; made anew if it is gone.
    static const char prefix[] = "concurrency_kit queue; dead letters in ";
    std::string dead_name = t.comment != nullptr && strncmp(t.comment, prefix, sizeof prefix - 1) == 0
                                ? std::string(t.comment + sizeof prefix - 1)
                                : std::string(ck::pg_call([&] { return makeObjectName(t.name, nullptr, "dead"); }));
    std::string dead = qualified(t.schema, dead_name.c_str());
    auto dead_relid = [&] {
        return ck::pg_call([&] { return get_relname_relid(dead_name.c_str(), get_rel_namespace(relid)); });
    };
    if (!OidIsValid(dead_relid()))
        create_dead_letters(dead);
    Oid dead_id = dead_relid();
    require_columns(dead_id, ck::fmt("dead-letter table %s", dead.c_str()).c_str(), dead_columns);

    // Before the triggers, which would take these statements for a user's: a job waiting for
    // others has lost what it waited for, and goes to the dead letters (ck.retry_dead brings it
    // back, ready); a job parked behind its key's limit is ready; and since the lease token
    // sequence starts again at 1, a lease held then could be told from a new one by its token
    // only by chance: it is lost (negated: no claim hands out a negative token), the job claimable
    // again when the lease ends.
    run_on_queue("WITH gone AS (DELETE FROM " + q + " WHERE waiting_for IS NOT NULL RETURNING *)"
                 " INSERT INTO " + dead + " (id, job, attempts, last_error)"
                 " SELECT g.id, pg_catalog.to_jsonb(g), g.attempts, 'dependencies lost: the extension was dropped'"
                 " FROM gone AS g", relid);
    run_on_queue("UPDATE " + q + " SET run_at = GREATEST(parked_run_at, pg_catalog.now()), parked_run_at = NULL"
                 " WHERE parked_run_at IS NOT NULL", relid);
    run_on_queue("UPDATE " + q + " SET has_dependants = NULL WHERE has_dependants IS NOT NULL", relid);
    run_on_queue("UPDATE " + q + " SET lease_token = OPERATOR(pg_catalog.-) lease_token"
                 " WHERE lease_token OPERATOR(pg_catalog.>) 0", relid);
    create_indexes(q, relid, queue_indexes);
    create_indexes(dead, dead_id, dead_indexes);
    create_triggers(q, relid, notify);
    register_queue(q, relid, dead_id, lease, max_attempts, notify);
    // Plans and a claim frontier this backend may keep from the queue's life before the drop.
    ck::pg_call([&] {
        CacheInvalidateRelcacheByRelid(relid);
        ck::frontier_reset_at_end(relid);
    });
    ck::spi_finish();
    PG_RETURN_OID(relid);
}
