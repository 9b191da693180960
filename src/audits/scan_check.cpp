// ck.scan_check: EXPLAINs one statement (never runs it) and names each sequential scan.
// Under SERIALIZABLE a seq scan takes a predicate lock on the whole table, so any
// concurrent write to that table can fail this transaction with 40001.
#include "base/args.hpp"
#include "base/qualify.hpp"
#include "base/spi.hpp"

extern "C" {
#include "parser/parser.h"
}

#include <string>

namespace {

// The statement must be exactly one SELECT, INSERT, UPDATE, DELETE or MERGE.
void require_one_dml(const char *query)
{
    ck::pg_call([&] {
        List *stmts = raw_parser(query, RAW_PARSE_DEFAULT);
        if (list_length(stmts) != 1)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("ck.scan_check takes exactly one statement, got %d", list_length(stmts))));
        Node *stmt = ((RawStmt *) linitial(stmts))->stmt;
        if (!IsA(stmt, SelectStmt) && !IsA(stmt, InsertStmt) && !IsA(stmt, UpdateStmt) && !IsA(stmt, DeleteStmt)
#if PG_VERSION_NUM >= 150000
            && !IsA(stmt, MergeStmt)
#endif
        )
            ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                            errmsg("ck.scan_check explains SELECT, INSERT, UPDATE, DELETE and MERGE only"),
                            errdetail("Utility commands have no plan to check, and are never run.")));
    });
}

} // namespace

CK_FUNCTION(ck_scan_check)
{
    ck::require_arg(fcinfo, 0, "query");
    const char *query = text_to_cstring(PG_GETARG_TEXT_PP(0));
    require_one_dml(query);

    std::string explain = std::string("EXPLAIN (VERBOSE, FORMAT JSON) ") + query;
    ck::spi_connect();
    Datum plan = ck::pg_call([&] {
        if (SPI_execute(explain.c_str(), false, 0) != SPI_OK_UTILITY || SPI_processed != 1)
            elog(ERROR, "EXPLAIN returned no plan");
        bool isnull;
        return SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    });
    // Walk every plan node of the JSON plan, in plan order (operators qualified: the caller's search_path).
#define FIELD CK_OP("->>")
    ck::pg_call([&] {
        Oid types[1] = {JSONOID};
        Datum values[1] = {plan};
        int rc = SPI_execute_with_args(
            "SELECT n" FIELD "'Node Type', "
            "       pg_catalog.concat(pg_catalog.quote_ident(n" FIELD "'Schema'), '.',"
            "                         pg_catalog.quote_ident(n" FIELD "'Relation Name')), "
            "       pg_catalog.concat('reads the whole table: under SERIALIZABLE that is a predicate lock on all of it, so any ',"
            "         'concurrent write to it can fail this transaction with 40001',"
            "         CASE WHEN (n" FIELD "'Filter') IS NOT NULL THEN pg_catalog.format("
            "           '; an index for the filter (%s) would lock only the rows read', n" FIELD "'Filter') END)"
            "  FROM pg_catalog.jsonb_path_query($1::pg_catalog.jsonb, 'strict $.**') AS n"
            " WHERE pg_catalog.jsonb_typeof(n)" CK_OP("=") "'object'"
            "   AND (n" FIELD "'Node Type')" CK_OP("=") "ANY ('{Seq Scan,Parallel Seq Scan}'::pg_catalog.text[])"
            "   AND n" CK_OP("?") "'Relation Name'",
            1, types, values, nullptr, true, 0);
        if (rc != SPI_OK_SELECT)
            elog(ERROR, "could not read the plan: %s", SPI_result_code_string(rc));
    });
#undef FIELD
    Datum result = ck::return_result_rows(fcinfo);
    ck::spi_finish();
    return result;
}
