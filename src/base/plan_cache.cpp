// The per-backend plan cache and its relcache invalidation.
#include "base/plan_cache.hpp"
#include "base/spi.hpp"

extern "C" {
#include "common/hashfn.h"
#include "utils/inval.h"
}

#include <cstring>
#include <unordered_map>
#include <vector>

namespace ck {

PlanKey::PlanKey(StatementKind k, Oid rel, Oid ktype, const char *col, const char *keycol, std::string cols)
    : kind(k), relid(rel), key_type(ktype), columns(std::move(cols))
{
    std::memset(&column, 0, sizeof column);
    std::memset(&key_column, 0, sizeof key_column);
    strlcpy(NameStr(column), col, NAMEDATALEN);
    if (keycol != nullptr)
        strlcpy(NameStr(key_column), keycol, NAMEDATALEN);
}

bool PlanKey::operator==(const PlanKey &o) const
{
    return kind == o.kind && relid == o.relid && key_type == o.key_type &&
           std::strcmp(NameStr(column), NameStr(o.column)) == 0 &&
           std::strcmp(NameStr(key_column), NameStr(o.key_column)) == 0 && columns == o.columns;
}

namespace {

struct PlanKeyHash {
    size_t operator()(const PlanKey &k) const
    {
        uint32 h = hash_bytes_uint32(k.relid) ^ (static_cast<uint32>(k.kind.number) << 24) ^ hash_bytes_uint32(static_cast<uint32>(reinterpret_cast<uintptr_t>(k.kind.family))) ^ k.key_type;
        h = hash_combine(h, hash_bytes(reinterpret_cast<const unsigned char *>(NameStr(k.column)),
                                       static_cast<int>(std::strlen(NameStr(k.column)))));
        h = hash_combine(h, hash_bytes(reinterpret_cast<const unsigned char *>(NameStr(k.key_column)),
                                       static_cast<int>(std::strlen(NameStr(k.key_column)))));
        return hash_combine(h, hash_bytes(reinterpret_cast<const unsigned char *>(k.columns.data()),
                                          static_cast<int>(k.columns.size())));
    }
};

struct Entry {
    std::unique_ptr<Prepared> prepared;
    bool valid = true;
};

std::unordered_map<PlanKey, Entry, PlanKeyHash> plans;
std::vector<std::unique_ptr<Prepared>> retired;   // replaced while a caller may still hold them
uint64_t generation = 0;
int stale_entries = 0;

// Must not allocate or raise: runs inside invalidation processing.
void on_relcache_invalidation(Datum, Oid relid)
{
    generation++;
    for (auto &[key, entry] : plans) {
        if (entry.valid && (relid == InvalidOid || key.relid == relid)) {
            entry.valid = false;
            stale_entries++;
        }
    }
}

void free_plan(SPIPlanPtr plan)
{
    if (plan != nullptr)
        pg_call([&] { SPI_freeplan(plan); });
}

} // namespace

// Erasing an entry here is safe only because no caller holds one: a reference kept across
// another lookup once dangled when that lookup swept (an INSERT then ran a freed plan).
void plan_cache_sweep()
{
    if (stale_entries == 0 && retired.empty())
        return;
    for (auto &old : retired) {
        free_plan(old->plan);
        free_plan(old->each_plan);
    }
    retired.clear();
    for (auto it = plans.begin(); it != plans.end();) {
        if (!it->second.valid) {
            free_plan(it->second.prepared->plan);
            free_plan(it->second.prepared->each_plan);
            it = plans.erase(it);
        } else {
            ++it;
        }
    }
    stale_entries = 0;
}

const Prepared *plan_cache_lookup(const PlanKey &key)
{
    auto it = plans.find(key);
    if (it == plans.end() || !it->second.valid)
        return nullptr;
    return it->second.prepared.get();
}

uint64_t plan_cache_generation()
{
    return generation;
}

const Prepared &plan_cache_store(const PlanKey &key, std::unique_ptr<Prepared> prepared, uint64_t built_at)
{
    auto [it, inserted] = plans.try_emplace(key);
    Entry &entry = it->second;
    if (!inserted) {
        // A stale entry: a caller may still hold it and run its plan; the sweep frees both.
        retired.push_back(std::move(entry.prepared));
        stale_entries--;
    }
    entry.prepared = std::move(prepared);
    entry.valid = (built_at == generation);
    if (!entry.valid)
        stale_entries++;
    return *entry.prepared;
}

void plan_cache_init()
{
    CacheRegisterRelcacheCallback(on_relcache_invalidation, (Datum) 0);
}

} // namespace ck
