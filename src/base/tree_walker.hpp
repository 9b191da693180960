// Passing a walker function to PostgreSQL's tree walkers (expression_tree_walker and friends),
// whose parameter type changed in 16.
#pragma once

#include "base/pg.hpp"

extern "C" {
#include "nodes/nodeFuncs.h"
}

namespace ck {

#if PG_VERSION_NUM >= 160000
// Since 16 the tree walkers are macros that cast to tree_walker_callback, which is already
// the walkers' own type: pass them through unchanged.
inline tree_walker_callback as_walker(tree_walker_callback fn)
{
    return fn;
}
#else
// Before 16 the tree walkers take an unprototyped function pointer (C's "bool (*)()");
// going through void (*)() says the conversion is intended.
inline bool (*as_walker(bool (*fn)(Node *, void *)))()
{
    return reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(fn));
}
#endif

} // namespace ck
