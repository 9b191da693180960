// SPI calls made safe for C++: every one goes through pg_call.
#include "base/spi.hpp"

extern "C" {
#include "utils/builtins.h"
#include "utils/snapmgr.h"
}

#include <stdexcept>

namespace ck {

namespace {
int executing = 0;
}

void spi_connect()
{
    pg_call([] {
        if (SPI_connect() != SPI_OK_CONNECT)
            elog(ERROR, "SPI_connect failed");
    });
}

void spi_finish()
{
    pg_call([] { SPI_finish(); });
}

SPIPlanPtr prepare_kept(const char *sql, int nargs, Oid *argtypes, int cursor_options)
{
    SPIPlanPtr plan = SPI_prepare_cursor(sql, nargs, argtypes, cursor_options);
    if (plan == nullptr)
        elog(ERROR, "SPI_prepare failed for \"%s\": %s", sql, SPI_result_code_string(SPI_result));
    if (SPI_keepplan(plan) != 0)
        elog(ERROR, "SPI_keepplan failed");
    return plan;
}

namespace {

// Runs one SPI execution, counted by plans_executing, and returns its row count.
template <typename Execute>
uint64 counted(Execute execute)
{
    PlanExecution depth;
    int rc = pg_call([&] { return execute(); });
    if (rc < 0)
        throw std::runtime_error(SPI_result_code_string(rc));
    return SPI_processed;
}

} // namespace

uint64 execute_plan(SPIPlanPtr plan, Datum *values, const char *nulls, Snap snap)
{
    return counted([&] {
        // Taking a snapshot scans the proc array under a shared lock: skip it when the
        // caller's will do, as it would for the hand-written statement.
        if (snap == Snap::Caller && ActiveSnapshotSet())
            return SPI_execute_snapshot(plan, values, nulls, GetActiveSnapshot(), InvalidSnapshot, false, true, 0);
        if (snap == Snap::Latest)
            return SPI_execute_snapshot(plan, values, nulls, GetLatestSnapshot(), InvalidSnapshot, false, true, 0);
        return SPI_execute_plan(plan, values, nulls, snap == Snap::ReadOnly, 0);
    });
}

uint64 execute_plan_in(SPIPlanPtr plan, Datum *values, const char *nulls, Snapshot snapshot)
{
    return counted([&] { return SPI_execute_snapshot(plan, values, nulls, snapshot, InvalidSnapshot, false, true, 0); });
}

void execute_sql(const char *sql)
{
    pg_call([&] {
        int rc = SPI_execute(sql, false, 0);
        if (rc < 0)
            elog(ERROR, "SPI_execute failed for \"%s\": %s", sql, SPI_result_code_string(rc));
    });
}

int plans_executing()
{
    return executing;
}

PlanExecution::PlanExecution()
{
    executing++;
}

PlanExecution::~PlanExecution()
{
    executing--;
}

Datum result_datum(uint64 row, int col, bool *isnull)
{
    return pg_call([&] { return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, isnull); });
}

} // namespace ck

namespace ck {

ReturnSetInfo *begin_result_set(FunctionCallInfo fcinfo)
{
    ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
    TupleDesc desc;
    if (rsinfo == nullptr || !IsA(rsinfo, ReturnSetInfo) || (rsinfo->allowedModes & SFRM_Materialize) == 0)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("set-valued function called in context that cannot accept a set")));
    MemoryContext old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
    // The caller's row type when it gives one (a function scan does): looking it up again
    // from the function's OUT arguments costs a claim about 1% of its time.
    Oid scalar_type;
    TypeFuncClass kind = TYPEFUNC_COMPOSITE;
    desc = rsinfo->expectedDesc;
    if (desc == nullptr)
        kind = get_call_result_type(fcinfo, &scalar_type, &desc);
    if (kind == TYPEFUNC_SCALAR) {   // SETOF a scalar: rows of one column
        desc = CreateTemplateTupleDesc(1);
        TupleDescInitEntry(desc, 1, "value", scalar_type, -1, 0);
#if PG_VERSION_NUM >= 190000
        // 19 requires it before a hand-built descriptor is used (it fills the cached offsets).
        TupleDescFinalize(desc);
#endif
    } else if (kind != TYPEFUNC_COMPOSITE) {
        elog(ERROR, "return type must be a row type or a scalar");
    }
    rsinfo->returnMode = SFRM_Materialize;
    rsinfo->setResult = tuplestore_begin_heap(true, false, work_mem);
    rsinfo->setDesc = CreateTupleDescCopy(desc);
    MemoryContextSwitchTo(old);
    return rsinfo;
}

void append_result_rows(ReturnSetInfo *rsinfo, int ncols, const uint64 *order)
{
    // A queue altered by hand may return other types than the function declares: refuse
    // them rather than hand the caller a datum of the wrong type.
    TupleDesc got = SPI_tuptable->tupdesc;
    TupleDesc want = rsinfo->setDesc;
    for (int i = 0; i < want->natts; i++) {
        Oid type = i < got->natts ? TupleDescAttr(got, i)->atttypid : InvalidOid;
        if (type != TupleDescAttr(want, i)->atttypid)
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                            errmsg("column \"%s\" is of type %s, but the function returns %s",
                                   i < got->natts ? NameStr(TupleDescAttr(got, i)->attname) : "?",
                                   OidIsValid(type) ? format_type_be(type) : "nothing",
                                   format_type_be(TupleDescAttr(want, i)->atttypid)),
                            errhint("The table was altered after ck.create_queue made it: give the column back its type.")));
    }
    if (ncols < 0 || ncols == SPI_tuptable->tupdesc->natts) {
        for (uint64 i = 0; i < SPI_processed; i++)
            tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[order ? order[i] : i]);
        return;
    }
    Datum *values = static_cast<Datum *>(palloc(sizeof(Datum) * SPI_tuptable->tupdesc->natts));
    bool *nulls = static_cast<bool *>(palloc(sizeof(bool) * SPI_tuptable->tupdesc->natts));
    for (uint64 i = 0; i < SPI_processed; i++) {
        heap_deform_tuple(SPI_tuptable->vals[order ? order[i] : i], SPI_tuptable->tupdesc, values, nulls);
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    pfree(values);
    pfree(nulls);
}

Datum return_result_rows(FunctionCallInfo fcinfo, int ncols)
{
    pg_call([&] { append_result_rows(begin_result_set(fcinfo), ncols); });
    return (Datum) 0;
}

} // namespace ck
