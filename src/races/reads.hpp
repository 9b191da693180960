// The unlocked reads the detector compares writes with: for each table, the latest statement
// of this transaction that read it without a row lock under READ COMMITTED, with its snapshot.
// Tables, not rows: a read of one row and a write of another of the same table count as a
// read and a write of the same thing (rows read are not recorded; that would cost every read).
#pragma once

#include "base/pg.hpp"
#include "races/reports.hpp"

extern "C" {
#include "utils/snapshot.h"
}

namespace ck {

struct RaceRead {
    Oid relid;
    SnapshotData snapshot;          // the read's snapshot; its xip arrays are the entry's own
    uint32 xip_room, subxip_room;   // their allocated lengths, reused by the next read
    uint64 order;                   // when it was read (the oldest entry is reused when all are taken)
    char text[race_text_size];
};

// This transaction's latest unlocked read of relid, nullptr when there was none since the
// latest locked one (or when this backend keeps too many tables to remember it).
const RaceRead *race_read_of(Oid relid);

// Installs the ExecutorStart hook and the transaction callback; from _PG_init.
void race_reads_init();

} // namespace ck
