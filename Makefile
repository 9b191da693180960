# concurrency_kit: PGXS build. `make && make install && make installcheck` works against
# a server you already run; `make demo`, `make test`, `make bench`, `make chaos`, `make bench-peers`,
# `make bench-sustained` and `make bench-horizon` do the whole set-up
# on a throwaway cluster (see test/run.sh).

EXTENSION    = concurrency_kit
# The source tree is where this Makefile is: `.` in-tree, `..` for what Debian's pg_buildext runs from build-15/
# (`make -f ../Makefile VPATH=..`). Every list below is found there and named relative to it, as PGXS wants
# (it installs $(srcdir)/$(DATA), compiles $(OBJS) found through VPATH); nothing is written into it.
ck_srcdir   := $(patsubst %/,%,$(dir $(firstword $(MAKEFILE_LIST))))
ck_sources   = $(patsubst $(ck_srcdir)/%,%,$(wildcard $(addprefix $(ck_srcdir)/,$(1))))
EXTVERSION  := $(shell sed -n "s/^default_version *= *'\(.*\)'/\1/p" $(ck_srcdir)/$(EXTENSION).control)

MODULE_big   = $(EXTENSION)
OBJS         = $(patsubst %.cpp,%.o,$(call ck_sources,src/*.cpp src/*/*.cpp src/*/*/*.cpp))
DATA         = $(call ck_sources,sql/$(EXTENSION)--*.sql sql/$(EXTENSION)--*.control)
DOCS         = sql/postgres_exporter_queries.yaml

PG_CXXFLAGS  = -std=c++17 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wno-register -fno-omit-frame-pointer
PG_CPPFLAGS  = -I$(srcdir)/src
# The module's version (PG_MODULE_MAGIC_EXT on 18+) is the control file's default_version.
PG_CPPFLAGS += -DCK_VERSION='"$(EXTVERSION)"'
SHLIB_LINK  += -lstdc++

# pg_regress inputs in sql/ (beside the install scripts); test_helpers defines the helpers of the others (schema test).
REGRESS      = test_helpers conditional plan_cache boundary memory sqlstate_action queue_lifecycle advisory_lock retry guard volatility_audit \
               search_path queue_frontier queue_plan queue_unique queue_activity queue_limits queue_dependencies queue_install
REGRESS     += update_if_version lock_rows lock_audit upgrade_calls lock_namespace_prepared
REGRESS     += queue_redrive queue_timeouts
REGRESS     += queue_history
REGRESS     += queue_pause
REGRESS     += rate_limit queue_rate
REGRESS     += race_audit
REGRESS     += race_detector_plans
REGRESS_OPTS = --load-extension=$(EXTENSION)
ISOLATION    = $(notdir $(basename $(call ck_sources,test/specs/*.spec)))
ISOLATION_OPTS = --inputdir=$(ck_srcdir)/test --load-extension=$(EXTENSION)
# (before the include: PGXS reads it in its installcheck rule; the rule that makes it is below)
ifneq ($(ck_srcdir),.)
REGRESS_PREP = $(CURDIR)/sql/search_path_calls.psql
endif

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
$(OBJS): $(wildcard $(ck_srcdir)/src/*.hpp $(ck_srcdir)/src/*/*.hpp $(ck_srcdir)/src/*/*/*.hpp)
src/module.o: $(ck_srcdir)/$(EXTENSION).control

# Out of tree, the objects' folders are made in the build directory (named absolutely: VPATH would find the
# source tree's), and sql/search_path.sql's \ir finds sql/search_path_calls.psql where pg_regress runs psql, as
# PGXS links data/*.data there.
ck_objdirs   = $(addprefix $(CURDIR)/,$(patsubst %/,%,$(sort $(dir $(OBJS)))))
$(OBJS): | $(ck_objdirs)
$(ck_objdirs):
	$(MKDIR_P) $@
ifneq ($(ck_srcdir),.)
$(CURDIR)/sql/search_path_calls.psql: $(ck_srcdir)/sql/search_path_calls.psql
	$(MKDIR_P) $(dir $@)
	ln -sf $(abspath $<) $@
endif

# The floors of the source tree (issue 46): every #include in src/ points down the floors declared in src/README.md
# (test/layers.py; make test runs it, with its self-tests, as its first suite).
.PHONY: layers
layers:
	python3 $(ck_srcdir)/test/layers.py $(ck_srcdir)/src

# PG=17 (18, 19) runs the target on that major, in a Debian root of the suite that ships it (test/major.sh);
# test-all runs make test on every tested major, two at a time (CK_LANES); test-packages builds, installs, upgrades and removes
# the Debian package of every tested major (or of PG), as distributions build it (test/package/run.sh).
.PHONY: demo test bench chaos bench-peers bench-sustained bench-horizon test-all test-packages
demo test bench chaos bench-peers bench-sustained bench-horizon:
	bash test/run.sh $@ $(PG)
test-all:
	bash test/every_major.sh
test-packages:
	bash test/package/run.sh $(PG)

# The PGXN release zip $(EXTENSION)-$(EXTVERSION).zip in the current directory: git archive of HEAD, META.json
# checked against the PGXN Meta Spec and the control file (test/dist/make_dist.sh; test/dist/check.sh tests it).
.PHONY: dist
dist:
	bash $(ck_srcdir)/test/dist/make_dist.sh $(ck_srcdir) $(EXTENSION) $(EXTVERSION)
