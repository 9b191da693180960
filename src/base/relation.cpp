// Validation of table, column and key arguments against the catalog.
#include "base/relation.hpp"
#include "base/qualify.hpp"

extern "C" {
#include "access/genam.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "parser/parse_coerce.h"
#include "parser/parse_oper.h"
#include "utils/acl.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

namespace ck {

TableRef table_ref(Oid relid)
{
    if (!OidIsValid(relid))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("table must not be NULL or 0")));
    char relkind = get_rel_relkind(relid);
    if (relkind == '\0')
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                        errmsg("relation with OID %u does not exist", relid)));
    const char *name = get_rel_name(relid);
    if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("\"%s\" is not a table", name)));

    const char *schema = get_namespace_name(get_rel_namespace(relid));
    TableRef t;
    t.relid = relid;
    t.name = name;
    t.qualified = psprintf("%s.%s", schema, name);
    t.sql = quote_qualified_identifier(schema, name);
    t.rows_sql = relkind == RELKIND_RELATION ? psprintf("ONLY %s", t.sql) : t.sql;
    return t;
}

void require_select(const TableRef &table)
{
    Oid user = GetUserId();
    if (pg_class_aclcheck(table.relid, user, ACL_SELECT) != ACLCHECK_OK &&
        pg_attribute_aclcheck_all(table.relid, user, ACL_SELECT, ACLMASK_ANY) != ACLCHECK_OK)
        aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, table.name);
}

static ColumnRef column_by_attnum(const TableRef &table, AttrNumber attnum)
{
    ColumnRef c;
    Oid collation;
    c.attnum = attnum;
    get_atttypetypmodcoll(table.relid, attnum, &c.type, &c.typmod, &collation);
    c.base_type = getBaseType(c.type);
    c.name = get_attname(table.relid, attnum, false);
    c.sql = quote_identifier(c.name);
    c.type_sql = format_type_extended(c.type, -1, FORMAT_TYPE_FORCE_QUALIFY);
    c.type_display = format_type_be(c.type);
    return c;
}

ColumnRef column_ref(const TableRef &table, const char *name, const char *hint)
{
    AttrNumber attnum = get_attnum(table.relid, name);
    if (attnum <= 0)   // InvalidAttrNumber (missing or dropped) or a system column
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                        errmsg("column \"%s\" of table \"%s\" does not exist", name, table.qualified),
                        hint != nullptr ? errhint("%s", hint) : 0));
    return column_by_attnum(table, attnum);
}

// Single-column, non-partial, expression-free unique index on attnum (a primary key when
// primary is set), or InvalidAttrNumber-style false.
static bool has_single_column_unique_index(Relation rel, AttrNumber attnum, bool primary,
                                           AttrNumber *found)
{
    List *indexes = RelationGetIndexList(rel);
    ListCell *lc;
    bool ok = false;
    foreach (lc, indexes) {
        HeapTuple tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
        if (!HeapTupleIsValid(tup))
            continue;
        Form_pg_index idx = (Form_pg_index) GETSTRUCT(tup);
        bool usable = idx->indisunique && idx->indisvalid && idx->indnkeyatts == 1 &&
                      idx->indkey.values[0] != 0 &&
                      heap_attisnull(tup, Anum_pg_index_indpred, nullptr) &&
                      heap_attisnull(tup, Anum_pg_index_indexprs, nullptr);
        if (primary ? (usable && idx->indisprimary)
                    : (usable && idx->indkey.values[0] == attnum)) {
            *found = idx->indkey.values[0];
            ok = true;
        } else if (primary && idx->indisprimary) {
            *found = InvalidAttrNumber;   // a primary key, but not a usable one
            ok = true;
        }
        ReleaseSysCache(tup);
        if (ok)
            break;
    }
    list_free(indexes);
    return ok;
}

ColumnRef key_column_ref(const TableRef &table, const char *key_column)
{
    Relation rel = table_open(table.relid, AccessShareLock);
    AttrNumber attnum = InvalidAttrNumber;
    if (key_column == nullptr) {
        if (!has_single_column_unique_index(rel, InvalidAttrNumber, true, &attnum))
            ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
                            errmsg("table \"%s\" has no primary key", table.qualified),
                            errhint("Pass key_column => 'col' naming a column with a unique index.")));
        if (attnum == InvalidAttrNumber)
            ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
                            errmsg("the primary key of table \"%s\" is not a single column", table.qualified),
                            errhint("Pass key_column => 'col' naming a column with a unique index.")));
    } else {
        attnum = column_ref(table, key_column).attnum;
        AttrNumber found;
        if (!has_single_column_unique_index(rel, attnum, false, &found))
            ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
                            errmsg("column \"%s\" of table \"%s\" has no unique index", key_column,
                                   table.qualified),
                            errdetail("A conditional change must address exactly one row.")));
    }
    table_close(rel, AccessShareLock);
    return column_by_attnum(table, attnum);
}

namespace {

// The equality operator of type's default btree operator class; 42883 when it has none.
struct EqualityOperator {
    Oid schema;
    NameData name;
};

EqualityOperator default_equality_operator(Oid type)
{
    TypeCacheEntry *entry = lookup_type_cache(type, TYPECACHE_EQ_OPR);
    if (!OidIsValid(entry->eq_opr))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_FUNCTION),
                        errmsg("type %s has no default equality operator", format_type_be(type)),
                        errhint("Give the type a default btree operator class.")));
    HeapTuple tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(entry->eq_opr));
    if (!HeapTupleIsValid(tup))
        elog(ERROR, "cache lookup failed for operator %u", entry->eq_opr);
    Form_pg_operator op = (Form_pg_operator) GETSTRUCT(tup);
    EqualityOperator found{op->oprnamespace, op->oprname};
    ReleaseSysCache(tup);
    return found;
}

const char *operator_sql(const EqualityOperator &op)
{
    return psprintf("OPERATOR(%s.%s)", quote_identifier(get_namespace_name(op.schema)), NameStr(op.name));
}

} // namespace

// "key = $n", or "key = ANY ($n)" when any (param_type is then the array's element type).
static const char *key_match(const ColumnRef &key, Oid param_type, int param_no, bool any)
{
    const char *param = any ? psprintf("ANY ($%d)", param_no) : psprintf("$%d", param_no);
    EqualityOperator key_eq = default_equality_operator(key.type);
    const char *eq = operator_sql(key_eq);
    if (param_type == key.type)
        return psprintf("%s %s %s", key.sql, eq, param);
    if (key_eq.schema == PG_CATALOG_NAMESPACE) {
        List *name = list_make2(makeString(pstrdup("pg_catalog")), makeString(pstrdup("=")));
        Operator op = oper(make_parsestate(nullptr), name, key.type, param_type, true, -1);
        if (op != nullptr) {
            ReleaseSysCache(op);
            return psprintf("%s OPERATOR(pg_catalog.=) %s", key.sql, param);
        }
    }
    if (can_coerce_type(1, &param_type, &key.type, COERCION_ASSIGNMENT))
        return any ? psprintf("%s %s ANY ($%d::%s[])", key.sql, eq, param_no, key.type_sql)
                   : psprintf("%s %s $%d::%s", key.sql, eq, param_no, key.type_sql);
    ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                    errmsg("key%s of type %s do%s not match column \"%s\" of type %s", any ? "s" : "",
                           format_type_be(param_type), any ? "" : "es", key.name, key.type_display),
                    errhint("Pass the key%s as %s.", any ? "s" : "", key.type_display)));
    return nullptr;
}

const char *key_match_sql(const ColumnRef &key, Oid param_type, int param_no)
{
    return key_match(key, param_type, param_no, false);
}

const char *key_in_array_sql(const ColumnRef &key, Oid array_type, int param_no)
{
    Oid element = get_element_type(array_type);
    if (!OidIsValid(element))
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH), errmsg("keys must be an array")));
    return key_match(key, element, param_no, true);
}

bool is_version_type(Oid type)
{
    return type == INT2OID || type == INT4OID || type == INT8OID;
}

char *value_text(Datum value, Oid type)
{
    Oid output;
    bool varlena;
    getTypeOutputInfo(type, &output, &varlena);
    return OidOutputFunctionCall(output, value);
}

const char *equality_operator_sql(Oid type)
{
    return operator_sql(default_equality_operator(type));
}

} // namespace ck
