// The version guard: a BEFORE UPDATE trigger (ck.version_guard) that bumps the version of
// every updated row whose UPDATE left it as it was, so a writer that bypasses
// ck.update_if_version (plain SQL, another service, a migration) still makes every
// optimistic reader of the row stale. ck.version_guard_ddl writes the CREATE TRIGGER,
// ck.add_version_guard runs it.
//
// An UPDATE that sets the version itself: a higher value is kept (ck.update_if_version's
// own + 1 passes unchanged, never bumped twice); a lower one, or NULL, is refused (23514): a
// version that goes back could match a stale reader's again.
#include "base/boundary.hpp"
#include "base/relation.hpp"
#include "base/spi.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "commands/defrem.h"
#include "commands/trigger.h"
#include "utils/rel.h"
}

#include <string>

namespace {

int64 as_int64(Datum d, Oid type)
{
    return type == INT2OID ? DatumGetInt16(d) : type == INT4OID ? DatumGetInt32(d) : DatumGetInt64(d);
}

// The new version of one row, as a Datum of the column's type; plain C over PostgreSQL data.
HeapTuple guard_row(TriggerData *td)
{
    Relation rel = td->tg_relation;
    if (td->tg_trigger->tgnargs != 1)
        ereport(ERROR, (errcode(ERRCODE_TRIGGERED_ACTION_EXCEPTION),
                        errmsg("ck_internal.version_guard() takes the version column's name as its one argument")));
    const char *name = td->tg_trigger->tgargs[0];
    AttrNumber attnum = get_attnum(RelationGetRelid(rel), name);
    if (attnum <= 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                        errmsg("version column \"%s\" of table \"%s\" does not exist", name, RelationGetRelationName(rel)),
                        errhint("Drop the trigger \"%s\", or add it again with ck.add_version_guard.",
                                td->tg_trigger->tgname)));
    TupleDesc desc = RelationGetDescr(rel);
    Oid type = getBaseType(TupleDescAttr(desc, attnum - 1)->atttypid);
    if (!ck::is_version_type(type))
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("version column \"%s\" of table \"%s\" is not smallint, integer or bigint", name,
                               RelationGetRelationName(rel))));
    bool old_null, new_null;
    Datum old_d = heap_getattr(td->tg_trigtuple, attnum, desc, &old_null);
    Datum new_d = heap_getattr(td->tg_newtuple, attnum, desc, &new_null);
    int64 old_v = old_null ? 0 : as_int64(old_d, type);
    int64 new_v = new_null ? 0 : as_int64(new_d, type);
    if (!new_null && (old_null || new_v > old_v))
        return td->tg_newtuple;   // the UPDATE moved the version forward itself
    if (new_null || new_v < old_v)
        ereport(ERROR, (errcode(ERRCODE_CHECK_VIOLATION),
                        errmsg("%s of table \"%s\" must not go back (from " INT64_FORMAT " to %s)", name,
                               RelationGetRelationName(rel), old_v, new_null ? "NULL" : psprintf(INT64_FORMAT, new_v)),
                        errdetail("A version that goes back could match a stale reader's again."),
                        errhint("Leave %s out of the UPDATE: the guard \"%s\" bumps it.", name, td->tg_trigger->tgname)));
    Datum bumped;
    if (type == INT2OID)
        bumped = DirectFunctionCall2(int2pl, old_d, Int16GetDatum(1));
    else if (type == INT4OID)
        bumped = DirectFunctionCall2(int4pl, old_d, Int32GetDatum(1));
    else
        bumped = DirectFunctionCall2(int8pl, old_d, Int64GetDatum(1));
    int col = attnum;
    bool isnull = false;
    return heap_modify_tuple_by_cols(td->tg_newtuple, desc, 1, &col, &bumped, &isnull);
}

// The table and version column of a guard, validated; the trigger's name and DDL. The
// generator answers those who may read the table (require_select); add_version_guard leaves
// the check to CREATE TRIGGER itself (the TRIGGER privilege), as the plain DDL would.
std::string guard_ddl(FunctionCallInfo fcinfo, bool generator)
{
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
        throw ck::Error(ERRCODE_NULL_VALUE_NOT_ALLOWED, "tbl and version_col must not be NULL");
    Oid relid = PG_GETARG_OID(0);
    const char *col = NameStr(*PG_GETARG_NAME(1));
    struct Parts {
        const char *table;
        const char *trigger;
        const char *column;   // as a literal: the trigger's argument
    } p;
    ck::pg_call([&] {
        ck::TableRef t = ck::table_ref(relid);
        if (generator)
            ck::require_select(t);
        ck::ColumnRef c = ck::column_ref(t, col);
        if (!ck::is_version_type(c.base_type))
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                            errmsg("column \"%s\" of table \"%s\" is of type %s, not a version", c.name, t.qualified,
                                   c.type_display),
                            errhint("A version column is smallint, integer or bigint.")));
        p.table = t.sql;
        p.trigger = quote_identifier(makeObjectName(t.name, c.name, "version_guard"));
        p.column = quote_literal_cstr(c.name);
    });
    // OR REPLACE: running the DDL again (or for another column) leaves one guard of that name.
    return std::string("CREATE OR REPLACE TRIGGER ") + p.trigger + " BEFORE UPDATE ON " + p.table +
           " FOR EACH ROW EXECUTE FUNCTION ck_internal.version_guard(" + p.column + ");";
}

} // namespace

CK_FUNCTION(ck_version_guard)
{
    TriggerData *td = reinterpret_cast<TriggerData *>(fcinfo->context);
    if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(td->tg_event) || !TRIGGER_FIRED_FOR_ROW(td->tg_event) ||
        !TRIGGER_FIRED_BY_UPDATE(td->tg_event))
        throw ck::Error(ERRCODE_TRIGGERED_ACTION_EXCEPTION,
                        "ck_internal.version_guard() must be fired BEFORE UPDATE FOR EACH ROW",
                        "", "Create it with ck.add_version_guard.");
    return ck::pg_call([&] { return PointerGetDatum(guard_row(td)); });
}

CK_FUNCTION(ck_version_guard_ddl)
{
    std::string ddl = guard_ddl(fcinfo, true);
    return ck::pg_call([&] { return PointerGetDatum(cstring_to_text(ddl.c_str())); });
}

CK_FUNCTION(ck_add_version_guard)
{
    std::string ddl = guard_ddl(fcinfo, false);
    ck::spi_connect();
    ck::execute_sql(ddl.c_str());
    ck::spi_finish();
    return ck::pg_call([&] { return PointerGetDatum(cstring_to_text(ddl.c_str())); });
}
