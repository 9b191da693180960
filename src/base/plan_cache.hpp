// Prepared statements kept per backend, keyed by statement kind, table OID and the
// caller's column arguments; dropped when the table's relcache entry is invalidated.
#pragma once

#include "base/pg.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ck {

// A statement's kind: a value of some capability's own enum (this cache knows none of them).
// The enum's type is part of the kind, so two capabilities' enums never meet.
template <typename E>
inline const char statement_family = 0;

struct StatementKind {
    const void *family;
    uint16_t number;

    template <typename E>
    constexpr StatementKind(E kind) : family(&statement_family<E>), number(static_cast<uint16_t>(kind))
    {
    }
    bool operator==(const StatementKind &o) const { return family == o.family && number == o.number; }
};

struct PlanKey {
    StatementKind kind;
    Oid relid;
    Oid key_type;         // type of the key argument as the caller passed it
    NameData column;
    NameData key_column;  // empty: the primary key
    std::string columns;  // more column names, each ended by '\0' (the columns an update sets)

    PlanKey(StatementKind k, Oid rel, Oid ktype, const char *col, const char *keycol, std::string cols = {});
    bool operator==(const PlanKey &o) const;
};

// A kept plan and what messages about its table need. A capability that keeps more beside
// its plans (a queue's settings, a distribution's shards) derives from it: prepare_once<T>.
struct Prepared {
    SPIPlanPtr plan = nullptr;
    SPIPlanPtr each_plan = nullptr;   // a second plan of the same call, run once per row of the first
    std::string table;        // bare name
    std::string qualified;    // schema.name
    std::string column;
    std::string key_column;
    Oid key_type = InvalidOid;

    Prepared() = default;
    Prepared(Prepared &&) = default;
    Prepared &operator=(Prepared &&) = default;
    virtual ~Prepared() = default;
};

// The valid entry for key, or nullptr. An entry, once returned, stays valid until
// plan_cache_sweep (one rebuilt after an invalidation is a new object; the old one is retired).
const Prepared *plan_cache_lookup(const PlanKey &key);

// Frees the plans and entries invalidation retired. run_boundary calls it at the start of an
// outermost call, the one point where no caller can hold an entry or a plan of one.
void plan_cache_sweep();

// Bumped by every relcache invalidation; a plan built across a change is stored as
// already stale, so the next call rebuilds it.
uint64_t plan_cache_generation();

const Prepared &plan_cache_store(const PlanKey &key, std::unique_ptr<Prepared> prepared, uint64_t generation);

// Registers the relcache callback; called once from _PG_init.
void plan_cache_init();

// Look up, or build with build() (which returns a T, a Prepared with a kept plan) and keep.
// Every key of a kind is built by one capability as one type T.
template <typename T = Prepared, typename Build>
const T &prepare_once(const PlanKey &key, Build &&build)
{
    if (const Prepared *p = plan_cache_lookup(key))
        return static_cast<const T &>(*p);
    uint64_t generation = plan_cache_generation();
    return static_cast<const T &>(plan_cache_store(key, std::make_unique<T>(build()), generation));
}

} // namespace ck
