// Overlap guards: ck.overlap_guard_ddl and ck.add_overlap_guard. No overlapping ranges is a
// rule about absent rows, which no lock can protect: an exclusion constraint can.
#include "base/boundary.hpp"
#include "base/citus.hpp"
#include "guards/find_overlaps.hpp"
#include "guards/overlap_target.hpp"
#include "base/qualify.hpp"
#include "base/spi.hpp"

extern "C" {
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_constraint.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "utils/array.h"
#include "utils/rel.h"
}

#include <string>
#include <vector>

namespace ck {

namespace {

// Whether every row of the relation has the column non-null. Since 18 attnotnull is also set
// for a NOT VALID not-null constraint, which existing rows may break; only a validated one
// counts.
bool column_never_null(TupleDesc desc, AttrNumber attnum)
{
#if PG_VERSION_NUM >= 180000
    return TupleDescCompactAttr(desc, attnum - 1)->attnullability == ATTNULLABLE_VALID;
#else
    return TupleDescAttr(desc, attnum - 1)->attnotnull;
#endif
}

// The statements that add the guard: btree_gist when a key needs it, then the constraint.
std::vector<std::string> overlap_guard_ddl(const OverlapTarget &t, const char *constraint_name)
{
    struct Names {
        const char *constraint;
        const char *check;
        bool range_not_null;
    } names;
    pg_call([&] {
        Oid nsp = get_rel_namespace(t.table.relid);
        if (constraint_name != nullptr) {
            if (OidIsValid(get_relation_constraint_oid(t.table.relid, constraint_name, true)))
                ereport(ERROR, (errcode(ERRCODE_DUPLICATE_OBJECT),
                                errmsg("constraint \"%s\" of table \"%s\" already exists", constraint_name,
                                       t.table.qualified)));
            names.constraint = constraint_name;
        } else {
            names.constraint = ChooseConstraintName(t.table.name, t.range.name, "no_overlap", nsp, NIL);
        }
        names.check = ChooseConstraintName(names.constraint, nullptr, "not_empty", nsp,
                                           list_make1(pstrdup(names.constraint)));
        Relation rel = table_open(t.table.relid, AccessShareLock);
        names.range_not_null = column_never_null(RelationGetDescr(rel), t.range.attnum);
        table_close(rel, AccessShareLock);
    });
    const char *constraint_sql = pg_call([&] { return quote_identifier(names.constraint); });
    const char *check_sql = pg_call([&] { return quote_identifier(names.check); });

    std::vector<std::string> ddl;
    if (t.needs_btree_gist)
        ddl.push_back("CREATE EXTENSION IF NOT EXISTS btree_gist;\n");
    std::string alter = std::string("ALTER TABLE ") + t.table.sql;
    // Citus runs an ADD CONSTRAINT only as the one subcommand of its ALTER TABLE.
    auto next = [&](std::string &statement) {
        if (!t.citus) {
            statement += ",";
            return;
        }
        ddl.push_back(statement + ";\n");
        statement = alter;
    };
    std::string statement = alter;
    // A NULL range escapes the constraint and an empty one overlaps nothing: rule both out.
    if (!names.range_not_null) {
        statement += std::string("\n    ALTER COLUMN ") + t.range.sql + " SET NOT NULL";
        next(statement);
    }
    statement += std::string("\n    ADD CONSTRAINT ") + check_sql + " CHECK (NOT pg_catalog.isempty(" + t.range.sql + "))";
    next(statement);
    statement += std::string("\n    ADD CONSTRAINT ") + constraint_sql + " EXCLUDE USING gist (";
    // Operators schema-qualified: the DDL means the same whatever search_path runs it.
    for (int i = 0; i < t.nkeys; i++)
        statement += std::string(t.keys[i].sql) + " WITH " +
                     pg_call([&] { return equality_operator_sql(t.keys[i].type); }) + ", ";
    statement += std::string(t.range.sql) + " WITH OPERATOR(pg_catalog.&&));\n";
    ddl.push_back(statement);
    if (t.citus_column != nullptr)
        ddl.front().insert(0, fmt("-- Citus distributes %s by %s: the guard compares it too (no overlap among rows "
                                  "of equal %s).\n",
                                  t.table.qualified, t.citus_column, t.citus_column));
    return ddl;
}

} // namespace

} // namespace ck

CK_FUNCTION(ck_overlap_guard_ddl)
{
    const char *constraint_name = PG_ARGISNULL(3) ? nullptr : NameStr(*PG_GETARG_NAME(3));
    ck::OverlapTarget t = ck::overlap_target(fcinfo);
    ck::citus_overlap_key(t);
    std::string ddl;
    for (const std::string &statement : ck::overlap_guard_ddl(t, constraint_name))
        ddl += statement;
    return ck::pg_call([&] { return PointerGetDatum(cstring_to_text(ddl.c_str())); });
}

CK_FUNCTION(ck_add_overlap_guard)
{
    const char *constraint_name = PG_ARGISNULL(3) ? nullptr : NameStr(*PG_GETARG_NAME(3));
    ck::OverlapTarget t = ck::overlap_target(fcinfo);
    ck::citus_overlap_key(t);
    std::vector<std::string> statements = ck::overlap_guard_ddl(t, constraint_name);

    constexpr int shown = 5;
    ck::OverlapPair pairs[shown];
    ck::spi_connect();
    int n = ck::find_overlap_pairs(t, shown, pairs);
    if (n > 0) {
        std::string detail;
        for (int i = 0; i < n; i++) {
            const char *a = ck::pg_call([&] { return DatumGetCString(DirectFunctionCall1(tidout, pairs[i].a)); });
            const char *b = ck::pg_call([&] { return DatumGetCString(DirectFunctionCall1(tidout, pairs[i].b)); });
            detail += ck::fmt("%srows %s and %s%s%s: %s and %s", i ? "\n" : "", a, b, pairs[i].key ? " with key " : "",
                              pairs[i].key ? pairs[i].key : "", pairs[i].a_range, pairs[i].b_range);
        }
        throw ck::Error(ERRCODE_EXCLUSION_VIOLATION,
                        ck::fmt("table \"%s\" already has overlapping rows: the guard cannot be added",
                                t.table.qualified),
                        detail, "Fix or delete them (ck.find_overlaps lists them all), then add the guard.");
    }
    // One statement at a time: Citus forwards a statement's whole text to the workers, where it must be one command.
    std::string ddl;
    for (const std::string &statement : statements) {
        ck::execute_sql(statement.c_str());
        ddl += statement;
    }
    ck::spi_finish();
    return ck::pg_call([&] { return PointerGetDatum(cstring_to_text(ddl.c_str())); });
}
