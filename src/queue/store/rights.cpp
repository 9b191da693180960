// What the caller may do to a queue (rights.hpp).
#include "base/boundary.hpp"
#include "queue/store/rights.hpp"

extern "C" {
#include "miscadmin.h"
#include "utils/acl.h"
}

namespace ck {

bool may_bury(Oid queue, Oid dead_letters)
{
    return pg_call([&] {
        Oid user = GetUserId();
        // (pg_class_aclcheck is satisfied by any one bit of its mask: one call per right.)
        return pg_class_aclcheck(queue, user, ACL_SELECT) == ACLCHECK_OK &&
               pg_class_aclcheck(queue, user, ACL_DELETE) == ACLCHECK_OK &&
               pg_class_aclcheck(dead_letters, user, ACL_INSERT) == ACLCHECK_OK;
    });
}

bool may_claim(Oid queue)
{
    return pg_call([&] {
        Oid user = GetUserId();
        return pg_class_aclcheck(queue, user, ACL_SELECT) == ACLCHECK_OK &&
               pg_class_aclcheck(queue, user, ACL_UPDATE) == ACLCHECK_OK;
    });
}

} // namespace ck
