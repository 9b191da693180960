// Lost update and write skew from the facts of one body (race_rules.hpp), with their fixes.
#include "audits/race_rules.hpp"

extern "C" {
#include "access/table.h"
#include "catalog/pg_index.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"
}

namespace ck::race_audit {

namespace {

// Does a statement after the read's, up to the write's, name one of the read's targets?
bool used(const Facts *f, const Read *r, int until)
{
    for (int i = r->stmt + 1; i <= until; i++) {
        ListCell *lc;
        foreach (lc, (List *) list_nth(f->names, i)) {
            if (names_contain(r->targets, (const char *) lfirst(lc)))
                return true;
        }
    }
    return false;
}

bool committed_between(const Facts *f, int from, int to)
{
    ListCell *lc;
    foreach (lc, f->commits) {
        if (lfirst_int(lc) > from && lfirst_int(lc) <= to)
            return true;
    }
    return false;
}

// A lock taken before the read (by a locking read in an earlier statement, or by a lock call in
// an earlier statement or the read's own: ck.lock_rows('t', ARRAY(SELECT ...))) and still held
// at the write.
bool serialised(const Facts *f, const Read *r, const Write *w)
{
    ListCell *lc;
    foreach (lc, f->locks) {
        if (lfirst_int(lc) < r->stmt && !committed_between(f, lfirst_int(lc), w->stmt))
            return true;
    }
    foreach (lc, f->calls) {
        if (lfirst_int(lc) <= r->stmt && !committed_between(f, lfirst_int(lc), w->stmt))
            return true;
    }
    return false;
}

// The key columns of each unique index (exclusion constraints too, with exclusion) of relid:
// a List of int Lists; an index on an expression is left out.
List *unique_keys(Oid relid, bool exclusion)
{
    List *out = NIL;
    Relation rel = table_open(relid, AccessShareLock);
    List *indexes = RelationGetIndexList(rel);
    table_close(rel, AccessShareLock);
    ListCell *lc;
    foreach (lc, indexes) {
        HeapTuple tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
        if (!HeapTupleIsValid(tup))
            continue;
        Form_pg_index index = (Form_pg_index) GETSTRUCT(tup);
        if (index->indisunique || (exclusion && index->indisexclusion)) {
            List *key = NIL;
            bool plain = true;
            for (int i = 0; i < index->indnkeyatts; i++) {
                plain = plain && index->indkey.values[i] != 0;
                key = lappend_int(key, index->indkey.values[i]);
            }
            if (plain)
                out = lappend(out, key);
        }
        ReleaseSysCache(tup);
    }
    return out;
}

// Does a unique index or exclusion constraint have all its key columns among those the check
// compares?
bool covered(const Read *r)
{
    ListCell *lc;
    foreach (lc, unique_keys(r->relid, true)) {
        List *key = (List *) lfirst(lc);
        ListCell *att;
        bool all = true;
        foreach (att, key)
            all = all && list_member_int(r->filter, lfirst_int(att));
        if (all)
            return true;
    }
    return false;
}

// Does the UPDATE's WHERE compare a column that no unique index has (a re-check of the row)?
bool guarded(const Write *w)
{
    List *keys = NIL;
    ListCell *lc;
    foreach (lc, unique_keys(w->relid, false))
        keys = list_concat(keys, (List *) lfirst(lc));
    foreach (lc, w->guard) {
        if (!list_member_int(keys, lfirst_int(lc)))
            return true;
    }
    return false;
}

// SET col = v - ... with v the value read (or, in one statement, a sub-select's).
const SetItem *set_from(const Write *w, const Read *r, bool same)
{
    ListCell *lc;
    foreach (lc, w->sets) {
        const SetItem *item = (const SetItem *) lfirst(lc);
        if ((same && item->from_select) || names_contain(r->targets, item->from))
            return item;
    }
    return nullptr;
}

bool uses_in_set(const Facts *f, const Write *w, const Read *r)
{
    ListCell *lc;
    foreach (lc, (List *) list_nth(f->names, w->stmt)) {
        if (names_contain(r->targets, (const char *) lfirst(lc)))
            return true;
    }
    return false;
}

const char *relation_name(Oid relid)
{
    return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), get_rel_name(relid));
}

const char *attribute_list(Oid relid, List *atts, AttrNumber except)
{
    StringInfoData s;
    initStringInfo(&s);
    ListCell *lc;
    foreach (lc, atts) {
        if (lfirst_int(lc) == except)
            continue;
        appendStringInfo(&s, "%s%s", s.len > 0 ? ", " : "", quote_identifier(get_attname(relid, lfirst_int(lc), false)));
    }
    return s.data;
}

const char *const LostUpdateRule =
    "read, decide in code, write: the row can change between the read and the write, and under READ COMMITTED the "
    "other transaction's change is lost (RULES.md: read, decide, write the same row)";
const char *const WriteSkewRule =
    "a check over a set of rows guards the write: two transactions pass the check on the same snapshot and both "
    "write, under READ COMMITTED and REPEATABLE READ (RULES.md: write skew)";

// ck's counters are smallint, integer or bigint columns (or domains over them).
bool is_counter(Oid relid, const char *col)
{
    AttrNumber att = get_attnum(relid, col);
    if (att == InvalidAttrNumber)
        return false;
    Oid type = getBaseType(get_atttype(relid, att));
    return type == INT2OID || type == INT4OID || type == INT8OID;
}

const char *lost_update_fix(const Write *w, const SetItem *item)
{
    const char *table = relation_name(w->relid);
    if (item != nullptr && !is_counter(w->relid, item->col))
        return psprintf("one UPDATE ... SET %s = %s %c amount%s, or SELECT ... FOR NO KEY UPDATE in the read", item->col,
                        item->col, item->op, item->op == '-' ? psprintf(" WHERE %s >= amount", item->col) : "");
    if (item != nullptr && item->op == '-')
        return psprintf("ck.try_decrement('%s', <key>, '%s', <amount>) (one UPDATE ... SET %s = %s - amount WHERE "
                        "%s >= amount), or SELECT ... FOR NO KEY UPDATE in the read",
                        table, item->col, item->col, item->col, item->col);
    if (item != nullptr)
        return psprintf("ck.try_increment('%s', <key>, '%s', <amount>) (one UPDATE ... SET %s = %s + amount), or "
                        "SELECT ... FOR NO KEY UPDATE in the read",
                        table, item->col, item->col, item->col);
    return psprintf("SELECT ... FOR NO KEY UPDATE in the read, or write only while the row is as read: "
                    "ck.update_if_version('%s', ...) or ck.transition, or UPDATE ... WHERE <the value read>",
                    table);
}

const char *write_skew_fix(const Write *w, const Read *r)
{
    const char *table = relation_name(w->relid);
    if (!w->insert)
        return psprintf("lock the rows the check reads before deciding (SELECT ... FOR NO KEY UPDATE, or "
                        "ck.lock_rows('%s', <keys>)), or CALL ck.retry(..., 'serializable')",
                        table);
    if (r->overlap != InvalidAttrNumber)
        return psprintf("an exclusion constraint: ck.add_overlap_guard('%s', '%s', '{%s}')", table,
                        get_attname(r->relid, r->overlap, false), attribute_list(r->relid, r->filter, r->overlap));
    if (r->counts && r->filter != NIL)
        return psprintf("if at most one row may match, a unique constraint on (%s): ck.unique_guard_ddl('%s', '{%s}'); "
                        "else lock the row the count belongs to first (SELECT ... FOR NO KEY UPDATE), or "
                        "CALL ck.retry(..., 'serializable') in every transaction that writes %s",
                        attribute_list(r->relid, r->filter, InvalidAttrNumber), table,
                        attribute_list(r->relid, r->filter, InvalidAttrNumber), table);
    if (r->filter != NIL && !r->counts)
        return psprintf("a unique constraint on (%s): ck.unique_guard_ddl('%s', '{%s}'), then INSERT ... ON CONFLICT",
                        attribute_list(r->relid, r->filter, InvalidAttrNumber), table,
                        attribute_list(r->relid, r->filter, InvalidAttrNumber));
    return psprintf("CALL ck.retry(..., 'serializable') in every transaction that writes %s", table);
}

// The race a read and a later write make, nullptr when they make none; *fix says what fixes it.
const char *race(const Facts *f, const Read *r, const Write *w, const char **fix)
{
    if (r->relid != w->relid)
        return nullptr;
    bool same = r->in_write && r->stmt == w->stmt;
    if (!same && (r->in_write || r->stmt >= w->stmt || !(r->in_place || used(f, r, w->stmt))))
        return nullptr;
    if (serialised(f, r, w))
        return nullptr;
    if (w->insert) {
        if (w->on_conflict || covered(r))
            return nullptr;
        *fix = write_skew_fix(w, r);
        return "write_skew";
    }
    if (r->locked && !committed_between(f, r->stmt, w->stmt))
        return nullptr;
    const SetItem *item = set_from(w, r, same);
    if (item != nullptr || uses_in_set(f, w, r) || !r->set) {
        if (guarded(w))
            return nullptr;
        *fix = lost_update_fix(w, item);
        return "lost_update";
    }
    *fix = write_skew_fix(w, r);
    return "write_skew";
}

} // namespace

bool find_race(const Facts *f, const Write *w, Finding *out)
{
    for (int pass = 0; pass < 2; pass++) {
        ListCell *lr;
        foreach (lr, f->reads) {
            const Read *r = (const Read *) lfirst(lr);
            if (pass == 0 && !uses_in_set(f, w, r))
                continue;
            const char *fix = nullptr;
            const char *kind = race(f, r, w, &fix);
            if (kind != nullptr) {
                *out = Finding{r, kind, strcmp(kind, "lost_update") == 0 ? LostUpdateRule : WriteSkewRule, fix};
                return true;
            }
        }
    }
    return false;
}

} // namespace ck::race_audit
