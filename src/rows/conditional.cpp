// Conditional change: one UPDATE ... WHERE <condition> per call (ck.try_decrement,
// ck.decrement, ck.try_increment, ck.increment, ck.try_transition, ck.transition). Every call
// takes (table, key, column, ...); the key is declared "any", so an unknown literal 'A1' is read
// as the key column's type. The 0.x symbols stay, with their 0.x arguments and meaning, for the
// 0.x functions until ALTER EXTENSION UPDATE replaces them (the 0.x scripts name them too).
#include "base/args.hpp"
#include "base/errcodes.hpp"
#include "base/plan_cache.hpp"
#include "base/qualify.hpp"
#include "base/relation.hpp"
#include "rows/row_key.hpp"
#include "base/spi.hpp"

#include <stdexcept>

extern "C" {
#include "common/int.h"
#include "utils/numeric.h"
}

namespace {

using ck::ColumnRef;
using ck::require_arg;
using ck::Prepared;

// The statements of this file, each planned per table and column (plan_cache.hpp).
enum class Statement : uint8_t {
    Decrement,
    Increment,
    Transition,
    ReadAsText,   // the current value of a column, for the messages of raising forms
};
using ck::TableRef;

// What the SQL-level arguments say, read before any C++ object exists.
struct Call {
    Oid relid;
    const char *column;
    const char *key_column;   // nullptr: the primary key
    Datum key;
    Oid key_type;             // UNKNOWNOID for a literal, until resolve_key
    const char *column_hint;  // for a missing column: how 1.0 orders the arguments (counters)
    int64 amount;             // decrement/increment
    Datum bound;              // int8 (increment): amount subtracted; NULL: the column type's maximum
    bool bound_null;
    Datum from_value;         // text (transition)
    Datum to_value;           // text (transition)
};

const char *optional_name(FunctionCallInfo fcinfo, int argno)
{
    if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
        return nullptr;
    return NameStr(*PG_GETARG_NAME(argno));
}

// tbl 0, then key and col: 1 and 2 (1.0), or 2 and 1 (the 0.x counters).
Call read_call(FunctionCallInfo fcinfo, int key_arg, int col_arg, int key_column_arg)
{
    require_arg(fcinfo, 0, "table");
    require_arg(fcinfo, key_arg, "key");
    require_arg(fcinfo, col_arg, "column");
    Call c{};
    c.relid = PG_GETARG_OID(0);
    c.key = PG_GETARG_DATUM(key_arg);
    c.key_type = ck::polymorphic_arg_type(fcinfo, key_arg, "key");
    c.column = NameStr(*PG_GETARG_NAME(col_arg));
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

// The largest value of a counter column's type; 0 for a type that is not a counter. A numeric
// column is refused: its values need not be whole, and the result is bigint.
int64 counter_max(Oid type)
{
    switch (type) {
    case INT2OID:
        return PG_INT16_MAX;
    case INT4OID:
        return PG_INT32_MAX;
    case INT8OID:
        return PG_INT64_MAX;
    default:
        return 0;
    }
}

// Builds the statement for kind on the call's table, validating every argument: the column
// before the key, so that a 0.x call (table, column, key) with a text key is told the 1.0 order.
Prepared build(Statement kind, const Call &call)
{
    struct Resolved {
        TableRef table;
        ColumnRef column;
        ColumnRef key;
        Oid key_param;            // the type the key parameter takes
        const char *key_match;    // "key = $1"
        const char *column_eq;    // the column type's own equality operator (transition)
    } r;
    ck::pg_call([&] {
        r.table = ck::table_ref(call.relid);
        r.column = ck::column_ref(r.table, call.column, call.column_hint);
        r.key = ck::key_column_ref(r.table, call.key_column);
        r.key_param = ck::key_param_type(r.key, call.key_type);
        r.key_match = ck::key_match_sql(r.key, r.key_param, 1);
        r.column_eq = kind == Statement::Transition ? ck::equality_operator_sql(r.column.type) : nullptr;
    });
    bool counter = kind == Statement::Decrement || kind == Statement::Increment;
    int64 max = counter_max(r.column.base_type);
    if (counter && max == 0)
        throw ck::Error(ERRCODE_DATATYPE_MISMATCH,
                        ck::fmt("column \"%s\" of table \"%s\" is of type %s, not a counter",
                                r.column.name, r.table.qualified, r.column.type_display),
                        "A counter column is smallint, integer or bigint.",
                        ck::fmt("For a column of type %s use ck.update_if_version, or UPDATE ... SET %s = %s - amount "
                                "WHERE %s >= amount.",
                                r.column.type_display, r.column.sql, r.column.sql, r.column.sql));

    // Operators are schema-qualified (see qualify.hpp): the caller's search_path reaches none.
    std::string col = r.column.sql;
    std::string set_where = "UPDATE " + std::string(r.table.rows_sql) + " SET " + col + " = ";
    std::string where = std::string(" WHERE ") + r.key_match;
    std::string returning = " RETURNING " + col + "::pg_catalog.int8";
    std::string sql;
    Oid types[3] = {r.key_param, INT8OID, INT8OID};
    int nargs = 2;
    switch (kind) {
    case Statement::Decrement:
        // $2 is the amount; the condition lives in the same statement as the change.
        sql = set_where + col + CK_OP("-") "$2" + where + " AND " + col + CK_OP(">=") "$2" + returning;
        break;
    case Statement::Increment:
        // $3 is the upper bound less the amount (the caller computed it without overflow), NULL
        // without a bound; the column type's maximum bounds it too (LEAST skips a NULL), so
        // the sum always fits the column.
        sql = set_where + col + CK_OP("+") "$2" + where + " AND " + col + CK_OP("<=") "LEAST($3, " +
              std::to_string(max) + "::pg_catalog.int8" CK_OP("-") "$2)" + returning;
        nargs = 3;
        break;
    case Statement::Transition:
        // $2 is the new state and $3 the one the row must be in, both as text.
        sql = set_where + "$2::" + r.column.type_sql + where + " AND " + col + " " + r.column_eq + " $3::" +
              r.column.type_sql;
        types[1] = TEXTOID;
        types[2] = TEXTOID;
        nargs = 3;
        break;
    case Statement::ReadAsText:
        sql = "SELECT " + col + "::pg_catalog.text FROM " + r.table.rows_sql + where;
        nargs = 1;
        break;
    default:
        throw std::logic_error("not a conditional-change statement");
    }

    SPIPlanPtr plan = ck::pg_call([&] { return ck::prepare_kept(sql.c_str(), nargs, types); });
    return ck::row_plan(plan, r.table, r.column, r.key, r.key_param);
}

// The plan for kind, cached by the key's type as the call gives it (unknown for a literal);
// a literal key is then read as the type the plan takes.
const Prepared &prepared(Statement kind, Call &call)
{
    ck::PlanKey key(kind, call.relid, call.key_type, call.column, call.key_column);
    const Prepared &p = ck::prepare_once(key, [&] { return build(kind, call); });
    ck::resolve_key(p, &call.key, &call.key_type);
    return p;
}

// The row's current value of the column as text; false when there is no such row.
bool current_value(Call &call, std::string *value)
{
    const Prepared &read = prepared(Statement::ReadAsText, call);
    Datum values[1] = {call.key};
    // A fresh snapshot: the UPDATE may have waited for a concurrent change and seen the new
    // row version; the message must report that version, not the one the call began with.
    if (ck::execute_plan(read.plan, values, nullptr, ck::Snap::Fresh) == 0)
        return false;
    const char *v = ck::pg_call([] { return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1); });
    *value = v ? v : "NULL";
    return true;
}

// The message shared by all raising forms: "<table> <key>: ...".
std::string row_label(const Prepared &p, const Call &call)
{
    return p.table + " " + ck::key_text(call.key, call.key_type);
}

// A counter function: how it is called (for the 42703 of a 0.x call) and its try_ form.
struct Counter {
    Statement kind;
    const char *column_hint;
    const char *try_hint;     // on the raising form's errors; nullptr: this is the try_ form
    bool v0 = false;          // the 0.x function: (tbl, col, key, ...), numeric bound and result
};

constexpr Counter try_decrement{Statement::Decrement,
                                "1.0 takes the key before the column: ck.try_decrement(table, key, column, amount).",
                                nullptr};
constexpr Counter decrement{Statement::Decrement,
                            "1.0 takes the key before the column: ck.decrement(table, key, column, amount).",
                            "ck.try_decrement returns NULL instead of raising."};
constexpr Counter try_increment{Statement::Increment,
                                "1.0 takes the key before the column: ck.try_increment(table, key, column, amount, "
                                "upper_bound).",
                                nullptr};
constexpr Counter increment{Statement::Increment,
                            "1.0 takes the key before the column: ck.increment(table, key, column, amount, "
                            "upper_bound).",
                            "ck.try_increment returns NULL instead of raising."};
constexpr Counter try_decrement_v0{Statement::Decrement, nullptr, nullptr, true};
constexpr Counter decrement_v0{Statement::Decrement, nullptr, "", true};
constexpr Counter try_increment_v0{Statement::Increment, nullptr, nullptr, true};
constexpr Counter increment_v0{Statement::Increment, nullptr, "", true};

// The upper bound of a 0.x increment, numeric: NULL (no bound but the column type's) for one
// no bigint reaches ('Infinity', 'NaN', which sorts above every number, 1e100), false when no
// bigint is that low, else its floor.
bool bound_v0(Numeric bound, int64 *limit, bool *none)
{
    auto cmp = [&](int64 v) {
        return DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(bound),
                                                 NumericGetDatum(int64_to_numeric(v))));
    };
    *none = numeric_is_nan(bound) || cmp(PG_INT64_MAX) >= 0;
    if (*none)
        return true;
    if (cmp(PG_INT64_MIN) < 0)
        return false;
    *limit = DatumGetInt64(DirectFunctionCall1(numeric_int8, DirectFunctionCall1(numeric_floor, NumericGetDatum(bound))));
    return true;
}

// Shared by the counter functions: tbl 0, key 1, col 2 (0.x: col 1, key 2), amount 3,
// upper_bound 4 (increment), key_column last.
Datum change_counter(FunctionCallInfo fcinfo, const Counter &f)
{
    bool increment = f.kind == Statement::Increment;
    Call call = read_call(fcinfo, f.v0 ? 2 : 1, f.v0 ? 1 : 2, increment ? 5 : 4);
    call.column_hint = f.column_hint;
    call.amount = read_amount(fcinfo, 3);
    int64 bound = 0;
    bool reachable = true;   // false: no value plus amount stays within the bound
    call.bound_null = !increment || PG_ARGISNULL(4);
    if (f.v0 && increment) {
        require_arg(fcinfo, 4, "upper_bound");   // 0.x had no default
        reachable = ck::pg_call([&] { return bound_v0(PG_GETARG_NUMERIC(4), &bound, &call.bound_null); });
    } else if (!call.bound_null) {
        bound = PG_GETARG_INT64(4);
    }
    int64 limit = 0;
    if (reachable && !call.bound_null) {
        reachable = !pg_sub_s64_overflow(bound, call.amount, &limit);
        call.bound = Int64GetDatum(limit);
    }

    ck::spi_connect();
    const Prepared &p = prepared(f.kind, call);
    Datum values[3] = {call.key, Int64GetDatum(call.amount), call.bound};
    char nulls[3] = {' ', ' ', call.bound_null ? 'n' : ' '};
    if (reachable && ck::execute_plan(p.plan, values, nulls) == 1) {
        bool isnull;
        int64 result = DatumGetInt64(ck::result_datum(0, 1, &isnull));
        ck::spi_finish();
        if (f.v0)
            PG_RETURN_NUMERIC(ck::pg_call([&] { return int64_to_numeric(result); }));
        PG_RETURN_INT64(result);
    }
    if (f.try_hint == nullptr) {
        ck::spi_finish();
        PG_RETURN_NULL();
    }

    std::string current;
    if (!current_value(call, &current))
        ck::raise_no_such_row(p, ck::key_text(call.key, call.key_type), f.try_hint);
    std::string label = row_label(p, call);
    if (increment) {
        std::string bound_text = call.bound_null ? "the largest value of its type" : ck::fmt(INT64_FORMAT, bound);
        throw ck::Error(CK_ERRCODE_BOUND_EXCEEDED,
                        ck::fmt("%s: %s is %s, adding " INT64_FORMAT " would pass %s", label.c_str(),
                                p.column.c_str(), current.c_str(), call.amount, bound_text.c_str()),
                        ck::fmt("Table %s, %s: current %s, amount " INT64_FORMAT ", upper bound %s.",
                                p.qualified.c_str(), p.column.c_str(), current.c_str(), call.amount,
                                bound_text.c_str()),
                        f.try_hint);
    }
    throw ck::Error(CK_ERRCODE_INSUFFICIENT,
                    ck::fmt("%s: %s is %s, " INT64_FORMAT " requested", label.c_str(), p.column.c_str(),
                            current.c_str(), call.amount),
                    ck::fmt("Table %s, %s: available %s, requested " INT64_FORMAT ".", p.qualified.c_str(),
                            p.column.c_str(), current.c_str(), call.amount),
                    f.try_hint);
}

// ck.transition / ck.try_transition(tbl, key, col, from_value, to_value [, key_column]).
Datum change_state(FunctionCallInfo fcinfo, bool raise)
{
    Call call = read_call(fcinfo, 1, 2, 5);
    require_arg(fcinfo, 3, "from_value");
    require_arg(fcinfo, 4, "to_value");
    call.from_value = PG_GETARG_DATUM(3);
    call.to_value = PG_GETARG_DATUM(4);

    ck::spi_connect();
    const Prepared &p = prepared(Statement::Transition, call);
    Datum values[3] = {call.key, call.to_value, call.from_value};
    bool changed = ck::execute_plan(p.plan, values, nullptr) == 1;
    if (changed || !raise) {
        ck::spi_finish();
        PG_RETURN_BOOL(changed);
    }

    const char *hint = "ck.try_transition returns false instead of raising.";
    std::string current;
    if (!current_value(call, &current))
        ck::raise_no_such_row(p, ck::key_text(call.key, call.key_type), hint);
    std::string label = row_label(p, call);
    std::string from = ck::pg_call([&] { return TextDatumGetCString(call.from_value); });
    throw ck::Error(CK_ERRCODE_WRONG_STATE,
                    ck::fmt("%s: %s is '%s', not '%s'", label.c_str(), p.column.c_str(), current.c_str(),
                            from.c_str()),
                    ck::fmt("Table %s: the transition needs %s = '%s'.", p.qualified.c_str(),
                            p.column.c_str(), from.c_str()),
                    hint);
}

} // namespace

// The 1.0 functions.
CK_FUNCTION(ck_try_decrement_v1) { return change_counter(fcinfo, try_decrement); }
CK_FUNCTION(ck_decrement_v1) { return change_counter(fcinfo, decrement); }
CK_FUNCTION(ck_try_increment_v1) { return change_counter(fcinfo, try_increment); }
CK_FUNCTION(ck_increment_v1) { return change_counter(fcinfo, increment); }
CK_FUNCTION(ck_try_transition) { return change_state(fcinfo, false); }
CK_FUNCTION(ck_transition_v1) { return change_state(fcinfo, true); }

// The 0.x functions, until the update replaces them: (tbl, col, key, ...) counters returning
// numeric, transition returning false, transition_or_raise (void: its result is not read).
CK_FUNCTION(ck_try_decrement) { return change_counter(fcinfo, try_decrement_v0); }
CK_FUNCTION(ck_decrement) { return change_counter(fcinfo, decrement_v0); }
CK_FUNCTION(ck_try_increment) { return change_counter(fcinfo, try_increment_v0); }
CK_FUNCTION(ck_increment) { return change_counter(fcinfo, increment_v0); }
CK_FUNCTION(ck_transition) { return change_state(fcinfo, false); }
CK_FUNCTION(ck_transition_or_raise) { return change_state(fcinfo, true); }
