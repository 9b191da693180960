// Advisory-lock namespaces: names registered in ck.lock_namespaces and numbered by a
// sequence, never hashed, so two names never share a number.
#pragma once

#include "base/pg.hpp"

namespace ck {

// The namespace's number, registering the name if it is new (ck.lock_namespace). Waits for a
// concurrent, uncommitted registration of the same name as long as lock_timeout allows, then
// raises 55P03 naming the namespace.
int32 lock_namespace_register(const char *name);

// The number of a registered namespace (the lock calls): 42704 for a name never registered,
// naming the closest registered name when one is close, so that a typo is caught instead of
// locking a namespace nobody else uses. Never waits. Cached per backend once the
// registration is known to be committed.
int32 lock_namespace_find(const char *name);

// Registers the transaction callbacks that promote or drop this transaction's
// registrations in the cache; called once from _PG_init.
void lock_namespace_init();

} // namespace ck
