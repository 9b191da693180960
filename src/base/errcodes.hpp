// The extension's own SQLSTATEs (class CK). Each is documented in the README and
// classified by ck.sqlstate_action: 'retry' for a stale version (re-read and re-apply),
// 'busy' for a rate exceeded, 'conflict' for the others.
#pragma once

#include "base/pg.hpp"

// ck.decrement: the counter holds less than the amount requested.
#define CK_ERRCODE_INSUFFICIENT MAKE_SQLSTATE('C', 'K', '0', '0', '1')
// ck.increment: the amount would take the counter past its upper bound.
#define CK_ERRCODE_BOUND_EXCEEDED MAKE_SQLSTATE('C', 'K', '0', '0', '2')
// ck.transition_or_raise: the row is not in the state the transition starts from.
#define CK_ERRCODE_WRONG_STATE MAKE_SQLSTATE('C', 'K', '0', '0', '3')
// Raising forms of conditional change: no row has that key.
#define CK_ERRCODE_NO_SUCH_ROW MAKE_SQLSTATE('C', 'K', '0', '0', '4')
// ck.complete_and_claim: the job's lease was lost (expired and re-claimed, or finished).
#define CK_ERRCODE_LEASE_LOST MAKE_SQLSTATE('C', 'K', '0', '0', '5')
// ck.update_if_version_or_raise: the row's version moved on since the caller read it.
#define CK_ERRCODE_STALE_VERSION MAKE_SQLSTATE('C', 'K', '0', '0', '6')
// ck.rate: the key is at its rate (n calls counted in the last period); 'busy': call again later.
#define CK_ERRCODE_RATE_EXCEEDED MAKE_SQLSTATE('C', 'K', '0', '0', '7')
// ck.race_detector = 'error': an UPDATE overwrote a row another transaction changed after this
// one read the table without a lock (a lost update). A bug to fix, not to retry: 'error'.
#define CK_ERRCODE_LOST_UPDATE MAKE_SQLSTATE('C', 'K', '0', '0', '8')
