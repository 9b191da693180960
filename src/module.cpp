// Module entry: the magic block and one-time initialisation.
#include "base/pg.hpp"
#include "base/citus.hpp"
#include "locks/lock_namespace.hpp"
#include "base/plan_cache.hpp"
#include "queue/signal/activity.hpp"
#include "queue/signal/frontier.hpp"
#include "queue/store/plans.hpp"
#include "queue/signal/wakeup.hpp"
#include "queue/signal/pause.hpp"
#include "races/mode.hpp"
#include "races/overwrite.hpp"
#include "races/reads.hpp"
#include "races/reports.hpp"

extern "C" {
#if PG_VERSION_NUM >= 180000
// Name and version as pg_get_loaded_modules() shows them; CK_VERSION comes from the Makefile.
PG_MODULE_MAGIC_EXT(.name = "concurrency_kit", .version = CK_VERSION);
#else
PG_MODULE_MAGIC;
#endif

void _PG_init(void);

void _PG_init(void)
{
    ck::plan_cache_init();
    ck::lock_namespace_init();
    ck::queue_wakeup_init();
    ck::queue_pause_init();
    ck::queue_activity_init();   // before the frontier's, which reserves the GUC prefix
    ck::queue_frontier_init();
    ck::queue_plan_init();
    ck::citus_note_log_hook();
    ck::race_mode_init();
    ck::race_reads_init();
    ck::race_overwrite_init();
    ck::race_reports_init();
}
}
