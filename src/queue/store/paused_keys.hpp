// A queue's paused concurrency keys (ck.pause_queue(queue, key)), read with its claim's plan and
// kept with it: claims of a queue without paused keys read nothing more.
#pragma once

#include "base/pg.hpp"

#include <string>
#include <unordered_set>

namespace ck {

using PausedKeys = std::unordered_set<std::string>;

// The queue's rows of ck.paused_keys, with the latest snapshot (the settings reloaded after a
// pause's invalidation must include its commit). Outside pg_call (runs SPI).
PausedKeys read_paused_keys(Oid queue);

} // namespace ck
