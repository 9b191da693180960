// Module entry: the magic block and one-time initialisation.
#include "pg.hpp"
#include "lock_namespace.hpp"
#include "plan_cache.hpp"
#include "queue_wakeup.hpp"

extern "C" {
PG_MODULE_MAGIC;

void _PG_init(void);

void _PG_init(void)
{
    ck::plan_cache_init();
    ck::lock_namespace_init();
    ck::queue_wakeup_init();
}
}
