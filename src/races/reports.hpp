// The reports the detector keeps for reading afterwards (ck.race_reports): the latest ones of
// every backend, in a ring of fixed size in the shared state, emptied by ck.race_reports_reset.
#pragma once

#include "base/pg.hpp"

namespace ck {

// A statement as reports quote it (base/statement_text.hpp), cut to fit.
constexpr int race_text_size = 256;

struct RaceReport {
    TimestampTz at;
    int pid;
    Oid database;
    Oid role;
    TransactionId changed_by;   // the transaction whose change the write overwrites
    int level;                  // RaceMode: log, warning or error
    char table[2 * NAMEDATALEN + 8];
    char key[128];              // "(id)=(7)", or the row's ctid where the table has no primary key
    char columns[128];          // the columns the write overwrites
    char read[race_text_size];
    char write[race_text_size];
};

constexpr int race_reports_kept = 128;

// Keeps r in the ring (the oldest report makes room). Without the shared state (a 15 or 16
// server with no room for it, see base/shared_memory.hpp) nothing is kept. Inside pg_call.
void race_report_keep(const RaceReport &r);

// Asks for the ring's part of the shared state; from _PG_init.
void race_reports_init();

} // namespace ck
