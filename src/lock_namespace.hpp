// Advisory-lock namespaces: names registered in ck.lock_namespaces and numbered by a
// sequence, never hashed, so two names never share a number.
#pragma once

#include "pg.hpp"

namespace ck {

// The namespace's number, registering the name on first use. Cached per backend once the
// registration is known to be committed. A first use waits for a concurrent, uncommitted
// registration of the same name at most wait_ms (-1: as long as lock_timeout allows), then
// raises 55P03 naming the namespace.
int32 lock_namespace_number(const char *name, int wait_ms = -1);

// Registers the transaction callbacks that promote or drop this transaction's
// registrations in the cache; called once from _PG_init.
void lock_namespace_init();

} // namespace ck
