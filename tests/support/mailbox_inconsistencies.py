"""Mailboxes broken between ``mailbox`` and ``mailboxPathV3`` the way production breaks them.

Every inconsistency is one write of a real ``CassandraMailboxStore`` operation (James's write
order) failed by the fault seam; ``mailbox_tables`` and ``assert_consistent`` read both tables
with plain CQL, never through the job.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from mailserver.cassandra.session import CassandraSession
from mailserver.mailbox.cassandra_mailboxes import CassandraMailboxStore
from mailserver.model.address import Username
from mailserver.model.ids import MailboxId
from mailserver.model.mailbox import Mailbox, MailboxPath
from tests.support.maintenance import fail_once

ORPHAN_MAILBOX = "orphanMailboxDAOEntry"
ORPHAN_PATH = "orphanMailboxPathDAOEntry"
SAME_ID_CONFLICT = "sameIdConflict"
GHOST_CONFLICT = "conflictingEntry"


@dataclass
class Broken:
    """What was broken, by kind, and what each broken mailbox must look like once repaired."""

    by_kind: dict[str, list[MailboxId]] = field(default_factory=dict)
    expected: dict[MailboxId, tuple[MailboxPath, int]] = field(default_factory=dict)   # id -> (path, uidvalidity)
    ghosts: list[tuple[MailboxId, MailboxId, MailboxPath]] = field(default_factory=list)   # (ghost, live, path)

    def add(self, kind: str, mailbox: Mailbox, path: MailboxPath | None = None) -> None:
        self.by_kind.setdefault(kind, []).append(mailbox.id)
        self.expected[mailbox.id] = (path or mailbox.path, mailbox.uid_validity)

    def counts(self) -> dict[str, int]:
        return {kind: len(ids) for kind, ids in self.by_kind.items()}


def seed_mailboxes(session: CassandraSession, *, users: int, per_user: int) -> list[Mailbox]:
    store = CassandraMailboxStore(session)
    tag = uuid.uuid4().hex[:6]
    names = ["INBOX", *(f"Folder{i}" for i in range(1, per_user))]
    return [store.create(MailboxPath.of(Username.of(f"mbx{u}-{tag}@example.com"), name), 1000 + u * 100 + i)
            for u in range(users) for i, name in enumerate(names)]


def break_mailboxes(session: CassandraSession, seeded: list[Mailbox], *, orphan_paths: int = 0,
                    orphan_rows: int = 0, renames_row_lost: int = 0, renames_delete_lost: int = 0,
                    stale_rows: int = 0, ghosts: int = 0) -> Broken:
    """Each kind produced where production produces it; ``seeded`` mailboxes (not INBOX) are used up."""
    store = CassandraMailboxStore(session)
    broken = Broken()
    victims = iter(m for m in seeded if m.path.name != "INBOX")
    users = sorted({m.path.user for m in seeded}, key=str)
    for i in range(orphan_paths):        # create: path written, mailbox row lost
        path = MailboxPath.of(users[i % len(users)], f"NoRow{i}")
        fail_once(session, "mailbox", "INSERT", lambda p=path, v=7000 + i: store.create(p, v))
        found = store.path_entry(path)     # find_by_path would complete the row
        broken.add(ORPHAN_PATH, found)
    for _ in range(orphan_rows):         # delete: path deleted, mailbox row delete lost
        m = next(victims)
        fail_once(session, "mailbox", "DELETE", lambda m=m: store.delete(m))
        broken.add(ORPHAN_MAILBOX, m)    # repaired by giving the row its path back
    for i in range(renames_row_lost):    # rename: new path written, row rewrite lost (old path kept)
        m = next(victims)
        target = MailboxPath.of(m.path.user, f"RenamedA{i}")
        fail_once(session, "mailbox", "INSERT", lambda m=m, t=target: store.rename(m, t))
        broken.add(SAME_ID_CONFLICT, m, target)   # the newer entry wins: the rename completes
    for i in range(renames_delete_lost):  # rename: new path and row written, old path delete lost
        m = next(victims)
        target = MailboxPath.of(m.path.user, f"RenamedB{i}")
        fail_once(session, "mailboxPathV3", "DELETE", lambda m=m, t=target: store.rename(m, t))
        broken.add(SAME_ID_CONFLICT, m, target)
    for i in range(stale_rows):          # rename with row lost, then the old name deleted with row delete lost
        m = next(victims)
        target = MailboxPath.of(m.path.user, f"RenamedC{i}")
        fail_once(session, "mailbox", "INSERT", lambda m=m, t=target: store.rename(m, t))
        fail_once(session, "mailbox", "DELETE", lambda m=m: store.delete(m))
        broken.add(SAME_ID_CONFLICT, m, target)   # the row says the deleted name: the path table wins
    for _ in range(ghosts):              # delete with row delete lost, then the same name created again
        m = next(victims)
        fail_once(session, "mailbox", "DELETE", lambda m=m: store.delete(m))
        live = store.create(m.path, 9000)
        broken.by_kind.setdefault(GHOST_CONFLICT, []).append(m.id)
        broken.ghosts.append((m.id, live.id, m.path))
    return broken


def mailbox_tables(session: CassandraSession) -> tuple[dict[uuid.UUID, tuple], dict[tuple, tuple]]:
    """``mailbox`` as {id: (namespace, user, name, uidvalidity)}, ``mailboxPathV3`` as {path: (id, uidvalidity)}."""
    rows = {r["id"]: (r["mailboxbase"].namespace, r["mailboxbase"].user, r["name"], r["uidvalidity"])
            for r in session.execute("SELECT id, mailboxbase, name, uidvalidity FROM mailbox")}
    paths = {(r["namespace"], r["user"], r["mailboxname"]): (r["mailboxid"], r["uidvalidity"])
             for r in session.execute("SELECT namespace, user, mailboxName, mailboxId, uidvalidity FROM mailboxPathV3")}
    return rows, paths


def assert_consistent(session: CassandraSession) -> dict[uuid.UUID, tuple]:
    """Every row has exactly one path entry, at its path, and every entry has its row."""
    rows, paths = mailbox_tables(session)
    from_paths = {mailbox_id: (*path, uidvalidity) for path, (mailbox_id, uidvalidity) in paths.items()}
    assert len(from_paths) == len(paths), "two path entries point to one mailbox"
    assert from_paths == rows
    return rows


def assert_repaired_as_expected(session: CassandraSession, broken: Broken) -> None:
    rows = assert_consistent(session)
    for mailbox_id, (path, uidvalidity) in broken.expected.items():
        assert rows[mailbox_id.value] == (path.namespace, str(path.user), path.name, uidvalidity), mailbox_id
