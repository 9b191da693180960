# concurrency_kit: PGXS build. `make && make install && make installcheck` works against
# a server you already run; `make demo`, `make test`, `make bench`, `make chaos`, `make bench-peers`,
# `make bench-sustained` and `make bench-horizon` do the whole set-up
# on a throwaway cluster (see test/run.sh).

EXTENSION    = concurrency_kit
EXTVERSION   = $(shell sed -n "s/^default_version *= *'\(.*\)'/\1/p" $(EXTENSION).control)

MODULE_big   = $(EXTENSION)
OBJS         = $(patsubst %.cpp,%.o,$(wildcard src/*.cpp))
DATA         = $(wildcard sql/$(EXTENSION)--*.sql) $(wildcard sql/$(EXTENSION)--*.control)
DOCS         = sql/postgres_exporter_queries.yaml

PG_CXXFLAGS  = -std=c++17 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wno-register -fno-omit-frame-pointer
PG_CPPFLAGS  = -I$(srcdir)/src
# The module's version (PG_MODULE_MAGIC_EXT on 18+) is the control file's default_version.
PG_CPPFLAGS += -DCK_VERSION='"$(EXTVERSION)"'
SHLIB_LINK  += -lstdc++

# pg_regress inputs in sql/ (beside the install scripts); setup defines test helpers.
REGRESS      = setup conditional plan_cache boundary memory sqlstate_action queue advisory_lock retry guard volatility_audit \
               search_path queue_frontier queue_plan queue_unique queue_activity queue_limits queue_dependencies queue_install
REGRESS     += version_update lock_rows lock_audit upgrade_calls
REGRESS_OPTS = --load-extension=$(EXTENSION)
ISOLATION    = $(notdir $(basename $(wildcard test/specs/*.spec)))
ISOLATION_OPTS = --inputdir=test --load-extension=$(EXTENSION)

# Debian's PGXS would also compile every .cpp to LLVM bitcode with clang and without
# PG_CXXFLAGS; the extension gains nothing from JIT inlining, so skip it. (Must precede
# the include: pgxs.mk tests it while it is read.)
override with_llvm = no

PG_CONFIG   ?= pg_config
PGXS        := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# Behaviour that only newer majors have is tested only there (MAJORVERSION comes from PGXS).
major_at_least = $(shell test $(MAJORVERSION) -ge $(1) && echo yes)
ifeq ($(call major_at_least,17),yes)
REGRESS     += infinite_interval unique_guard_search_path
else
# the custom wait event of ck.claim_wait (WaitEventExtensionNew) is new in 17
ISOLATION   := $(filter-out claim_wait_event,$(ISOLATION))
endif
ifeq ($(call major_at_least,18),yes)
REGRESS     += not_valid_not_null loaded_module
endif

# PGXS tracks no header dependencies for C++: rebuild every object when a header changes.
$(OBJS): $(wildcard src/*.hpp)
src/module.o: $(EXTENSION).control

# PG=17 (18, 19) runs the target on that major, in a Debian root of the suite that ships it (test/major.sh);
# test-all runs make test on every tested major in turn.
.PHONY: demo test bench chaos bench-peers bench-sustained bench-horizon test-all
demo test bench chaos bench-peers bench-sustained bench-horizon:
	bash test/run.sh $@ $(PG)
test-all:
	bash test/every_major.sh
