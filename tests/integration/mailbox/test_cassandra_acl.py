"""ACLs are event-sourced (eventStore) and projected into aclv2 and UserMailboxACL, as in James."""

from __future__ import annotations

import json
import uuid

import pytest

from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath

pytestmark = pytest.mark.integration


def test_acl_event_and_projections(mailbox_ctx, cassandra):
    user = Username.of(f"a{uuid.uuid4().hex[:10]}@example.com")
    path = MailboxPath.of(user, "Team")
    mailbox_id = mailbox_ctx.manager.create_mailbox(path)
    mailbox_ctx.manager.set_rights(path, "carol@example.com", "lrs")
    mailbox_ctx.manager.set_rights(path, "$staff", "l")

    events = cassandra.execute("SELECT eventId, event FROM eventStore WHERE aggregateId = ?", (str(mailbox_id),))
    assert [json.loads(e["event"])["type"] for e in events] == ["acl-updated", "acl-updated"]
    aclv2 = {r["key"]: r["rights"] for r in cassandra.execute("SELECT key, rights FROM aclv2 WHERE id = ?",
                                                             (mailbox_id.value,))}
    assert aclv2 == {"carol@example.com": {"l", "r", "s"}, "$staff": {"l"}}
    delegated = cassandra.execute("SELECT mailboxid, rights FROM UserMailboxACL WHERE userName = ?",
                                  ("carol@example.com",))
    assert {(r["mailboxid"], r["rights"]) for r in delegated} >= {(mailbox_id.value, "lrs")}
    assert cassandra.execute("SELECT * FROM UserMailboxACL WHERE userName = ?", ("$staff",)) == []

    mailbox_ctx.manager.delete_mailbox(path)
    assert cassandra.execute("SELECT key FROM aclv2 WHERE id = ?", (mailbox_id.value,)) == []
    assert (mailbox_id.value, "lrs") not in {(r["mailboxid"], r["rights"]) for r in cassandra.execute(
        "SELECT mailboxid, rights FROM UserMailboxACL WHERE userName = ?", ("carol@example.com",))}
