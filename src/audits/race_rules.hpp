// The rules of ck.race_audit: which read and later write of one body make a lost update or a
// write skew (the audit's head comment, race_audit.cpp, says when), and what fixes it.
#pragma once

#include "audits/race_facts.hpp"

namespace ck::race_audit {

// A write's race: the read that guards it, its kind ("lost_update", "write_skew"), the rule of
// RULES.md it breaks and what fixes it.
struct Finding {
    const Read *read;
    const char *kind;
    const char *rule;
    const char *fix;
};

// The race of w with the read it names itself (of a transfer's two balances, its own), else
// with the first read that makes one; false when it makes none.
bool find_race(const Facts *f, const Write *w, Finding *out);

} // namespace ck::race_audit
