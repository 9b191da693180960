// A job's place in the claim index, from a queue statement's result rows.
#include "queue/store/place.hpp"
#include "base/boundary.hpp"
#include "base/spi.hpp"

extern "C" {
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

namespace ck {

void check_place_columns(int col, int id_col)
{
    TupleDesc desc = SPI_tuptable->tupdesc;
    if (SPI_gettypeid(desc, col) != INT4OID || SPI_gettypeid(desc, col + 1) != TIMESTAMPTZOID ||
        (id_col > 0 && SPI_gettypeid(desc, id_col) != INT8OID))
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("the queue's columns priority and run_at are of types %s and %s, not integer and "
                               "timestamp with time zone", format_type_be(SPI_gettypeid(desc, col)),
                               format_type_be(SPI_gettypeid(desc, col + 1))),
                        errhint("The table was altered after ck.create_queue made it: give the columns back their types.")));
}

JobPlace job_place(uint64 row, int col, int id_col, Datum id)
{
    check_place_columns(col, id_col);
    TupleDesc desc = SPI_tuptable->tupdesc;
    bool isnull;
    HeapTuple tuple = SPI_tuptable->vals[row];
    if (id_col > 0)
        id = SPI_getbinval(tuple, desc, id_col, &isnull);
    return {DatumGetInt32(SPI_getbinval(tuple, desc, col, &isnull)),
            Place{DatumGetTimestampTz(SPI_getbinval(tuple, desc, col + 1, &isnull)), DatumGetInt64(id)}};
}

AttrNumber job_column(TupleDesc desc, const char *name, Oid type)
{
    for (int i = 0; i < desc->natts; i++) {
        Form_pg_attribute a = TupleDescAttr(desc, i);
        if (!a->attisdropped && strcmp(NameStr(a->attname), name) == 0)
            return a->atttypid == type ? a->attnum : InvalidAttrNumber;
    }
    return InvalidAttrNumber;
}

} // namespace ck
