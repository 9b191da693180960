// Module entry: the magic block and one-time initialisation.
#include "pg.hpp"
#include "plan_cache.hpp"

extern "C" {
PG_MODULE_MAGIC;

void _PG_init(void);

void _PG_init(void)
{
    ck::plan_cache_init();
}
}
