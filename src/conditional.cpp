// Conditional change: one UPDATE ... WHERE <condition> per call (ck.try_decrement,
// ck.decrement, ck.try_increment, ck.increment, ck.transition, ck.transition_or_raise).
#include "args.hpp"
#include "errcodes.hpp"
#include "plan_cache.hpp"
#include "qualify.hpp"
#include "relation.hpp"
#include "row_key.hpp"
#include "spi.hpp"

#include <stdexcept>

extern "C" {
#include "utils/numeric.h"
}

namespace {

using ck::ColumnRef;
using ck::require_arg;
using ck::Prepared;
using ck::StatementKind;
using ck::TableRef;

// What the SQL-level arguments say, read before any C++ object exists.
struct Call {
    Oid relid;
    const char *column;
    const char *key_column;   // nullptr: the primary key
    Datum key;
    Oid key_type;
    Datum amount;             // int8 (decrement/increment)
    Datum bound;              // numeric (increment)
    Datum from_value;         // text (transition)
    Datum to_value;           // text (transition)
};

const char *optional_name(FunctionCallInfo fcinfo, int argno)
{
    if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
        return nullptr;
    return NameStr(*PG_GETARG_NAME(argno));
}

// tbl, col and key are at the given positions; amount (when present) must be > 0.
Call read_call(FunctionCallInfo fcinfo, int col_arg, int key_arg, int key_column_arg)
{
    require_arg(fcinfo, 0, "table");
    require_arg(fcinfo, col_arg, "column");
    require_arg(fcinfo, key_arg, "key");
    Call c{};
    c.relid = PG_GETARG_OID(0);
    c.column = NameStr(*PG_GETARG_NAME(col_arg));
    c.key = PG_GETARG_DATUM(key_arg);
    c.key_type = ck::polymorphic_arg_type(fcinfo, key_arg, "key");
    c.key_column = optional_name(fcinfo, key_column_arg);
    return c;
}

int64 read_amount(FunctionCallInfo fcinfo, int argno)
{
    require_arg(fcinfo, argno, "amount");
    int64 amount = PG_GETARG_INT64(argno);
    if (amount <= 0)
        throw ck::Error(ERRCODE_INVALID_PARAMETER_VALUE,
                        ck::fmt("amount must be positive, got " INT64_FORMAT, amount));
    return amount;
}

bool is_counter_type(Oid type)
{
    return type == INT2OID || type == INT4OID || type == INT8OID || type == NUMERICOID;
}

// Builds the statement for kind on the call's table, validating every argument.
Prepared build(const ck::PlanKey &key, const Call &call)
{
    struct Resolved {
        TableRef table;
        ColumnRef column;
        ColumnRef key;
        const char *key_match;    // "key = $1"
        const char *column_eq;    // the column type's own equality operator (transition)
    } r;
    ck::pg_call([&] {
        r.table = ck::table_ref(call.relid);
        r.column = ck::column_ref(r.table, call.column);
        r.key = ck::key_column_ref(r.table, call.key_column);
        r.key_match = ck::key_match_sql(r.key, call.key_type, 1);
        r.column_eq = key.kind == StatementKind::Transition ? ck::equality_operator_sql(r.column.type) : nullptr;
    });
    bool counter = key.kind == StatementKind::Decrement || key.kind == StatementKind::Increment;
    if (counter && !is_counter_type(r.column.base_type))
        throw ck::Error(ERRCODE_DATATYPE_MISMATCH,
                        ck::fmt("column \"%s\" of table \"%s\" is of type %s, not a counter",
                                r.column.name, r.table.qualified, r.column.type_display),
                        "A counter column must be smallint, integer, bigint or numeric.");

    // Operators are schema-qualified (see qualify.hpp): the caller's search_path reaches none.
    std::string col = r.column.sql;
    std::string set_where = "UPDATE " + std::string(r.table.rows_sql) + " SET " + col + " = ";
    std::string where = std::string(" WHERE ") + r.key_match;
    std::string returning = " RETURNING " + col + "::pg_catalog.numeric";
    std::string sql;
    Oid types[3] = {call.key_type, INT8OID, NUMERICOID};
    int nargs = 2;
    switch (key.kind) {
    case StatementKind::Decrement:
        // $2 is the amount; the condition lives in the same statement as the change.
        sql = set_where + col + CK_OP("-") "$2" + where + " AND " + col + CK_OP(">=") "$2" + returning;
        break;
    case StatementKind::Increment:
        // $3 is the upper bound; compared as bound - amount so the test cannot overflow.
        sql = set_where + col + CK_OP("+") "$2" + where + " AND " + col + CK_OP("<=") "($3" CK_OP("-") "$2)" +
              returning;
        nargs = 3;
        break;
    case StatementKind::Transition:
        // $2 is the new state and $3 the one the row must be in, both as text.
        sql = set_where + "$2::" + r.column.type_sql + where + " AND " + col + " " + r.column_eq + " $3::" +
              r.column.type_sql;
        types[1] = TEXTOID;
        types[2] = TEXTOID;
        nargs = 3;
        break;
    case StatementKind::ReadAsText:
        sql = "SELECT " + col + "::pg_catalog.text FROM " + r.table.rows_sql + where;
        nargs = 1;
        break;
    default:
        throw std::logic_error("not a conditional-change statement");
    }

    SPIPlanPtr plan = ck::pg_call([&] { return ck::prepare_kept(sql.c_str(), nargs, types); });
    return ck::row_plan(plan, r.table, r.column, r.key, call.key_type);
}

const Prepared &prepared(StatementKind kind, const Call &call)
{
    ck::PlanKey key(kind, call.relid, call.key_type, call.column, call.key_column);
    return ck::prepare_once(key, [&] { return build(key, call); });
}

// The row's current value of the column as text; false when there is no such row.
bool current_value(const Call &call, std::string *value)
{
    const Prepared &read = prepared(StatementKind::ReadAsText, call);
    Datum values[1] = {call.key};
    // A fresh snapshot: the UPDATE may have waited for a concurrent change and seen the new
    // row version; the message must report that version, not the one the call began with.
    if (ck::execute_plan(read.plan, values, nullptr, ck::Snap::Fresh) == 0)
        return false;
    const char *v = ck::pg_call([] { return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1); });
    *value = v ? v : "NULL";
    return true;
}

// The single numeric a counter UPDATE returned, copied out of SPI's memory.
Datum returned_numeric()
{
    bool isnull;
    Datum d = ck::result_datum(0, 1, &isnull);
    return ck::pg_call([&] { return SPI_datumTransfer(d, false, -1); });
}

// The message shared by all raising forms: "<table> <key>: ...".
std::string row_label(const Prepared &p, const Call &call)
{
    return p.table + " " + ck::key_text(call.key, call.key_type);
}

// Shared by the four counter functions; col 1, key 2, amount 3, bound 4 when increment.
Datum change_counter(FunctionCallInfo fcinfo, StatementKind kind, bool raise)
{
    bool increment = kind == StatementKind::Increment;
    Call call = read_call(fcinfo, 1, 2, increment ? 5 : 4);
    int64 amount = read_amount(fcinfo, 3);
    if (increment) {
        require_arg(fcinfo, 4, "upper_bound");
        call.bound = PG_GETARG_DATUM(4);
    }
    call.amount = Int64GetDatum(amount);

    ck::spi_connect();
    const Prepared &p = prepared(kind, call);
    Datum values[3] = {call.key, call.amount, call.bound};
    if (ck::execute_plan(p.plan, values, nullptr) == 1) {
        Datum result = returned_numeric();
        ck::spi_finish();
        PG_RETURN_DATUM(result);
    }
    if (!raise) {
        ck::spi_finish();
        PG_RETURN_NULL();
    }

    std::string current;
    if (!current_value(call, &current))
        ck::raise_no_such_row(p, ck::key_text(call.key, call.key_type));
    std::string label = row_label(p, call);
    if (increment) {
        const char *bound = ck::pg_call([&] { return DatumGetCString(DirectFunctionCall1(numeric_out, call.bound)); });
        throw ck::Error(CK_ERRCODE_BOUND_EXCEEDED,
                        ck::fmt("%s: %s is %s, adding " INT64_FORMAT " would pass %s", label.c_str(),
                                p.column.c_str(), current.c_str(), amount, bound),
                        ck::fmt("Table %s, %s: current %s, amount " INT64_FORMAT ", upper bound %s.",
                                p.qualified.c_str(), p.column.c_str(), current.c_str(), amount, bound));
    }
    throw ck::Error(CK_ERRCODE_INSUFFICIENT,
                    ck::fmt("%s: %s is %s, " INT64_FORMAT " requested", label.c_str(), p.column.c_str(),
                            current.c_str(), amount),
                    ck::fmt("Table %s, %s: available %s, requested " INT64_FORMAT ".", p.qualified.c_str(),
                            p.column.c_str(), current.c_str(), amount));
}

// ck.transition(tbl, key, col, from_value, to_value [, key_column]).
Datum change_state(FunctionCallInfo fcinfo, bool raise)
{
    Call call = read_call(fcinfo, 2, 1, 5);
    require_arg(fcinfo, 3, "from_value");
    require_arg(fcinfo, 4, "to_value");
    call.from_value = PG_GETARG_DATUM(3);
    call.to_value = PG_GETARG_DATUM(4);

    ck::spi_connect();
    const Prepared &p = prepared(StatementKind::Transition, call);
    Datum values[3] = {call.key, call.to_value, call.from_value};
    bool changed = ck::execute_plan(p.plan, values, nullptr) == 1;
    if (changed || !raise) {
        ck::spi_finish();
        PG_RETURN_BOOL(changed);
    }

    std::string current;
    if (!current_value(call, &current))
        ck::raise_no_such_row(p, ck::key_text(call.key, call.key_type));
    std::string label = row_label(p, call);
    std::string from = ck::pg_call([&] { return TextDatumGetCString(call.from_value); });
    throw ck::Error(CK_ERRCODE_WRONG_STATE,
                    ck::fmt("%s: %s is '%s', not '%s'", label.c_str(), p.column.c_str(), current.c_str(),
                            from.c_str()),
                    ck::fmt("Table %s: the transition needs %s = '%s'.", p.qualified.c_str(),
                            p.column.c_str(), from.c_str()));
}

} // namespace

CK_FUNCTION(ck_try_decrement) { return change_counter(fcinfo, StatementKind::Decrement, false); }
CK_FUNCTION(ck_decrement) { return change_counter(fcinfo, StatementKind::Decrement, true); }
CK_FUNCTION(ck_try_increment) { return change_counter(fcinfo, StatementKind::Increment, false); }
CK_FUNCTION(ck_increment) { return change_counter(fcinfo, StatementKind::Increment, true); }
CK_FUNCTION(ck_transition) { return change_state(fcinfo, false); }
CK_FUNCTION(ck_transition_or_raise) { return change_state(fcinfo, true); }
