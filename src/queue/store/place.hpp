// A job's place in the claim index (priority, run_at, id), read from the rows a queue statement
// returned. The claim frontier (signal/frontier.hpp) keeps such places per priority.
#pragma once

#include "base/pg.hpp"

namespace ck {

// A place inside one priority of the claim index.
struct Place {
    TimestampTz run_at;
    int64 id;
};

// The order of the claim index within one priority.
inline bool place_less(const Place &a, const Place &b)
{
    return a.run_at < b.run_at || (a.run_at == b.run_at && a.id < b.id);
}

struct JobPlace {
    int32 priority;
    Place place;
};

// Columns col, col + 1 (priority, run_at) and id_col (0: none) of the last execution must
// have the types ck.create_queue gives them. Inside pg_call.
void check_place_columns(int col, int id_col);

// The place of the job of result row `row`: its id from column id_col (0: the given id), its
// priority and run_at from columns col and col + 1. Inside pg_call.
JobPlace job_place(uint64 row, int col, int id_col, Datum id = 0);

// The attribute number of the queue's column name in desc when it has that type, else
// InvalidAttrNumber (a trigger's transition table). Never raises.
AttrNumber job_column(TupleDesc desc, const char *name, Oid type);

} // namespace ck
