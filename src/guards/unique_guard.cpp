// ck.unique_guard_ddl: CREATE UNIQUE INDEX CONCURRENTLY for "no duplicates". A partial
// predicate is parsed and analysed against the table, then deparsed: what is emitted is
// the expression PostgreSQL understood, never the caller's text.
#include "base/boundary.hpp"
#include "base/citus.hpp"
#include "base/relation.hpp"

extern "C" {
#include "access/table.h"
#include "catalog/pg_index.h"
#include "commands/defrem.h"
#include "optimizer/optimizer.h"
#include "parser/parse_clause.h"
#include "parser/parse_relation.h"
#include "parser/parser.h"
#include "utils/array.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
}

#include <string>

namespace {

const char *parse_predicate(const ck::TableRef &table, const std::string &probe);

// The predicate as one boolean, immutable expression over the table's columns.
const char *checked_predicate(const ck::TableRef &table, const char *clause)
{
    std::string probe = std::string("SELECT FROM ") + table.sql + " WHERE (" + clause + "\n)";
    try {
        return parse_predicate(table, probe);
    } catch (const ck::PgError &e) {
        // Positions in the error point into the probe, not into the caller's statement.
        ck::pg_call([&] {
            e.data()->cursorpos = 0;
            e.data()->context = psprintf("where_clause checked as: %s", probe.c_str());
        });
        throw;
    }
}

// Parses and analyses "SELECT FROM tbl WHERE (<clause>)"; returns the deparsed predicate.
const char *parse_predicate(const ck::TableRef &table, const std::string &probe)
{
    return ck::pg_call([&] {
        List *stmts = raw_parser(probe.c_str(), RAW_PARSE_DEFAULT);
        if (list_length(stmts) != 1 || !IsA(((RawStmt *) linitial(stmts))->stmt, SelectStmt))
            ereport(ERROR, (errcode(ERRCODE_SYNTAX_ERROR), errmsg("where_clause must be one boolean expression")));
        SelectStmt *select = (SelectStmt *) ((RawStmt *) linitial(stmts))->stmt;
        if (list_length(select->fromClause) != 1 || select->whereClause == nullptr)
            ereport(ERROR, (errcode(ERRCODE_SYNTAX_ERROR), errmsg("where_clause must be one boolean expression")));
        ParseState *pstate = make_parsestate(nullptr);
        Relation rel = table_open(table.relid, AccessShareLock);
        ParseNamespaceItem *item = addRangeTableEntryForRelation(pstate, rel, AccessShareLock, nullptr, false, true);
        addNSItemToQuery(pstate, item, false, true, true);
        Node *predicate = transformWhereClause(pstate, select->whereClause, EXPR_KIND_INDEX_PREDICATE, "WHERE");
        if (contain_mutable_functions((Node *) expression_planner((Expr *) predicate)))
            ereport(ERROR, (errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
                            errmsg("functions in an index predicate must be marked IMMUTABLE")));
        char *sql = deparse_expression(predicate, deparse_context_for(table.name, table.relid), false, false);
        table_close(rel, AccessShareLock);
        free_parsestate(pstate);
        return sql;
    });
}

// IF NOT EXISTS skips any relation of the guard's name: the DDL would then leave no guard
// behind, silently. Refuse when that relation is not a valid index on the table — above all
// the INVALID index a failed CREATE INDEX CONCURRENTLY leaves (duplicates, a predicate
// function that fails).
void check_existing(const ck::TableRef &table, const char *name)
{
    ck::pg_call([&] {
        Oid nsp = get_rel_namespace(table.relid);
        Oid index = get_relname_relid(name, nsp);
        if (!OidIsValid(index))
            return;
        HeapTuple tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index));
        bool on_table = HeapTupleIsValid(tuple) && ((Form_pg_index) GETSTRUCT(tuple))->indrelid == table.relid;
        bool valid = on_table && ((Form_pg_index) GETSTRUCT(tuple))->indisvalid;
        if (HeapTupleIsValid(tuple))
            ReleaseSysCache(tuple);
        if (!on_table)
            ereport(ERROR, (errcode(ERRCODE_DUPLICATE_TABLE),
                            errmsg("relation \"%s\" already exists and is not an index on %s", name, table.qualified),
                            errhint("The guard's DDL (IF NOT EXISTS) would skip it and create no guard: rename that relation.")));
        if (!valid)
            ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                            errmsg("index \"%s\" exists but is not valid: it enforces nothing", name),
                            errdetail("A CREATE INDEX CONCURRENTLY that failed (duplicate rows, or a predicate function "
                                      "that raised) leaves an invalid index, and one still being built is not valid "
                                      "yet; the guard's DDL (IF NOT EXISTS) would skip it."),
                            errhint("Unless another session is still building it: DROP INDEX CONCURRENTLY %s; then fix "
                                    "the cause and run the guard's DDL again.",
                                    quote_qualified_identifier(get_namespace_name(nsp), name))));
    });
}

} // namespace

CK_FUNCTION(ck_unique_guard_ddl)
{
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
        throw ck::Error(ERRCODE_NULL_VALUE_NOT_ALLOWED, "tbl and cols must not be NULL");
    Oid relid = PG_GETARG_OID(0);
    ArrayType *cols = PG_GETARG_ARRAYTYPE_P(1);
    const char *clause = PG_ARGISNULL(2) ? nullptr : text_to_cstring(PG_GETARG_TEXT_PP(2));

    struct Columns {
        ck::TableRef table;
        int n;
        const char *list;    // quoted, comma-separated
        const char *name;    // deterministic: IF NOT EXISTS then means "this guard"
        const char *index;   // quoted
        const char *citus_column;   // the Citus distribution column added to cols, or NULL
    } c{};
    ck::pg_call([&] {
        c.table = ck::table_ref(relid);
        ck::require_select(c.table);
        Datum *elems;
        bool *nulls;
        deconstruct_array(cols, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR, &elems, &nulls, &c.n);
        if (c.n == 0 || ARR_NDIM(cols) != 1)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("cols must name at least one column")));
        StringInfoData list, names;
        initStringInfo(&list);
        initStringInfo(&names);
        Bitmapset *seen = nullptr;
        for (int i = 0; i < c.n; i++) {
            if (nulls[i])
                ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("cols must not contain NULL")));
            ck::ColumnRef col = ck::column_ref(c.table, NameStr(*DatumGetName(elems[i])));
            if (bms_is_member(col.attnum, seen))
                ereport(ERROR, (errcode(ERRCODE_DUPLICATE_COLUMN), errmsg("column \"%s\" appears twice in cols", col.name)));
            seen = bms_add_member(seen, col.attnum);
            appendStringInfo(&list, "%s%s", i ? ", " : "", col.sql);
            appendStringInfo(&names, "%s%s", i ? "_" : "", col.name);
        }
        // Citus enforces a unique index shard by shard: on a distributed table it must hold the distribution column.
        ck::CitusTable citus = ck::citus_table(c.table.relid);
        if (citus.kind == ck::CitusKind::distributed && !bms_is_member(citus.column, seen)) {
            ck::ColumnRef col = ck::column_ref(c.table, get_attname(c.table.relid, citus.column, false));
            appendStringInfo(&list, ", %s", col.sql);
            appendStringInfo(&names, "_%s", col.name);
            c.citus_column = col.name;
            ereport(NOTICE, (errmsg("table \"%s\" is distributed by Citus by column \"%s\": the unique guard "
                                    "includes it, so it holds among rows of equal \"%s\"",
                                    c.table.qualified, col.name, col.name),
                             errdetail("Citus enforces a unique index shard by shard, so it must hold the "
                                       "distribution column; rows of different \"%s\" may repeat the other columns.",
                                       col.name)));
        }
        c.list = list.data;
        c.name = makeObjectName(c.table.name, names.data, "unique");
        c.index = quote_identifier(c.name);
    });
    check_existing(c.table, c.name);
    std::string ddl;
    if (c.citus_column != nullptr)
        ddl = ck::fmt("-- Citus distributes %s by %s: the index holds it too (unique among rows of equal %s).\n",
                      c.table.qualified, c.citus_column, c.citus_column);
    ddl += std::string("CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS ") + c.index + " ON " + c.table.sql +
                      " (" + c.list + ")";
    if (clause != nullptr)
        ddl += std::string(" WHERE ") + checked_predicate(c.table, clause);
    ddl += ";";
    return ck::pg_call([&] { return PointerGetDatum(cstring_to_text(ddl.c_str())); });
}
