// The rows a table of settings per queue in schema ck (ck.rate_limits, ck.paused_keys) holds for
// one queue, read when the queue's claim is planned.
#pragma once

#include "base/plan_cache.hpp"
#include "base/spi.hpp"

namespace ck {

// Runs sql (its $1: the queue, regclass) with a plan prepared once per backend under key: its rows
// in SPI_tuptable, how many returned. 0 when table is not there (an extension not yet updated to
// 1.1.0, which made it). Outside pg_call (runs SPI).
uint64 read_queue_rows(const PlanKey &key, const char *table, const char *sql, Oid queue, Snap snap);

} // namespace ck
