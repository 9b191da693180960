// What every SQL function of the queue shares: its arguments read the same way, the lost lease
// reported the same way, and the one place that sends a call on a distributed queue to its
// shards (on_queue).
#pragma once

#include "base/boundary.hpp"
#include "base/spi.hpp"
#include "queue/engine/distributed.hpp"

namespace ck {

// A claim's batch argument: 1 to max_claim_batch.
int32 batch_arg(FunctionCallInfo fcinfo, int argno);

// (queue, id, lease_token): the arguments every acknowledgement starts with.
struct Ack {
    Oid queue;
    Datum id;
    Datum token;
};
Ack ack_args(FunctionCallInfo fcinfo);

// The Complete statement's parameters: the job, its lease token and its result (the jsonb
// argument result_argno of the 1.1.0 overloads, kept in the queue's history; NULL when absent).
struct Completion {
    Datum values[3];
    char nulls[3];
};
Completion completion_args(FunctionCallInfo fcinfo, const Ack &a, int result_argno);

// When a wait of max_wait (argument argno: not NULL, not negative) from now ends; a wait longer
// than a century, or 'infinity', lasts until statement_timeout or a cancel.
TimestampTz wait_deadline(FunctionCallInfo fcinfo, int argno);

// The unique_for argument argno: NULL (nullptr), or positive and finite, and only with a key.
const Interval *unique_for_arg(FunctionCallInfo fcinfo, int argno, int key_argno);

// A lost lease, as every raising acknowledgement reports it (CK005): the queue, the job and
// the token; the HINT names the form that returns a failure value instead (none for
// complete_and_claim, whose point is the raise).
Error lease_lost(const Prepared &p, Datum id, Datum token, const char *try_form);

// A function's result made inside its SPI connection, copied out of the connection's memory
// (which spi_finish frees) when it is passed by reference: a text, a record. A set goes out
// through its tuplestore, a NULL has nothing to copy.
Datum result_out_of_spi(FunctionCallInfo fcinfo, Datum result);

// Runs a queue function inside its own SPI connection: on a distributed queue by route on its
// shards, else local(), which returns the function's result. Every queue function that a
// distributed queue takes goes through here.
template <typename Local>
Datum on_queue(FunctionCallInfo fcinfo, Oid queue, const Route &route, Local &&local)
{
    spi_connect();
    const Distribution *d = queue_distribution(queue);
    Datum result = result_out_of_spi(fcinfo, d != nullptr ? distributed_call(fcinfo, *d, route) : local());
    spi_finish();
    return result;
}

} // namespace ck
