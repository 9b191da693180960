// ck.queue_stats: counts for dashboards, from index ranges that stay small (see the Stats
// statement in queue_sql.cpp for what is exact and what is estimated).
#include "args.hpp"
#include "queue.hpp"
#include "spi.hpp"

CK_FUNCTION(ck_queue_stats)
{
    ck::require_arg(fcinfo, 0, "queue");
    Oid queue = PG_GETARG_OID(0);
    Datum values[1] = {ObjectIdGetDatum(queue)};
    ck::spi_connect();
    const ck::Prepared &p = ck::queue_statement(ck::StatementKind::Stats, queue);
    ck::execute_plan(p.plan, values, nullptr, ck::Snap::ReadOnly);
    Datum row = ck::pg_call([&] {
        TupleDesc desc;
        if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
            elog(ERROR, "return type must be a row type");
        return PointerGetDatum(SPI_returntuple(SPI_tuptable->vals[0], BlessTupleDesc(desc)));
    });
    ck::spi_finish();
    return row;
}
