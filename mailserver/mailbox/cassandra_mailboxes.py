"""``mailbox`` + ``mailboxPathV3`` with James's write order (CassandraMailboxMapper).

create: path (LWT, the uniqueness guard) then row; rename: new path (LWT), row, old path;
delete: path then row. Additive writes first, so a crash leaves at worst a stale entry that the
mailbox-inconsistency procedure knows how to fix.
"""

from __future__ import annotations

from collections.abc import Iterator

from mailserver.cassandra.session import CassandraSession
from mailserver.mailbox.errors import MailboxExists
from mailserver.mailbox.store import MailboxStore
from mailserver.model.address import Username
from mailserver.model.ids import MailboxId
from mailserver.model.mailbox import Mailbox, MailboxPath

INSERT_PATH = ("INSERT INTO mailboxPathV3 (namespace, user, mailboxName, mailboxId, uidvalidity) "
               "VALUES (?, ?, ?, ?, ?) IF NOT EXISTS")
DELETE_PATH = "DELETE FROM mailboxPathV3 WHERE namespace = ? AND user = ? AND mailboxName = ? IF EXISTS"
SELECT_PATH = "SELECT mailboxId, uidvalidity FROM mailboxPathV3 WHERE namespace = ? AND user = ? AND mailboxName = ?"
INSERT_ROW = "INSERT INTO mailbox (id, mailboxbase, name, uidvalidity) VALUES (?, ?, ?, ?)"
DELETE_ROW = "DELETE FROM mailbox WHERE id = ?"
SELECT_ROW = "SELECT id, mailboxbase, name, uidvalidity FROM mailbox WHERE id = ?"


def _row_to_mailbox(row: dict) -> Mailbox:
    base = row["mailboxbase"]
    return Mailbox(MailboxId(row["id"]), MailboxPath(base.namespace, Username(base.user), row["name"]),
                   row["uidvalidity"])


class CassandraMailboxStore(MailboxStore):
    def __init__(self, session: CassandraSession) -> None:
        self.s = session

    def _write_row(self, mailbox: Mailbox) -> None:
        p = mailbox.path
        self.s.execute(INSERT_ROW, (mailbox.id.value, (p.namespace, str(p.user)), p.name, mailbox.uid_validity))

    def create(self, path: MailboxPath, uid_validity: int) -> Mailbox:
        mailbox = Mailbox(MailboxId.generate(), path, uid_validity)
        if not self.s.execute_lwt(INSERT_PATH, (path.namespace, str(path.user), path.name, mailbox.id.value,
                                                uid_validity)):
            raise MailboxExists(path)
        self._write_row(mailbox)
        return mailbox

    def rename(self, mailbox: Mailbox, new_path: MailboxPath) -> Mailbox:
        if not self.s.execute_lwt(INSERT_PATH, (new_path.namespace, str(new_path.user), new_path.name,
                                                mailbox.id.value, mailbox.uid_validity)):
            raise MailboxExists(new_path)
        renamed = Mailbox(mailbox.id, new_path, mailbox.uid_validity)
        self._write_row(renamed)
        old = mailbox.path
        self.s.execute_lwt(DELETE_PATH, (old.namespace, str(old.user), old.name))
        return renamed

    def delete(self, mailbox: Mailbox) -> None:
        p = mailbox.path
        self.s.execute_lwt(DELETE_PATH, (p.namespace, str(p.user), p.name))
        self.s.execute(DELETE_ROW, (mailbox.id.value,))

    def find_by_path(self, path: MailboxPath) -> Mailbox | None:
        row = self.s.one(SELECT_PATH, (path.namespace, str(path.user), path.name))
        return Mailbox(MailboxId(row["mailboxid"]), path, row["uidvalidity"]) if row else None

    def find_by_id(self, mailbox_id: MailboxId) -> Mailbox | None:
        row = self.s.one(SELECT_ROW, (mailbox_id.value,))
        return _row_to_mailbox(row) if row else None

    def list_for_user(self, user: Username, namespace: str = "#private") -> list[Mailbox]:
        rows = self.s.execute("SELECT mailboxName, mailboxId, uidvalidity FROM mailboxPathV3 "
                              "WHERE namespace = ? AND user = ?", (namespace, str(user)))
        return [Mailbox(MailboxId(r["mailboxid"]), MailboxPath(namespace, user, r["mailboxname"]), r["uidvalidity"])
                for r in rows]

    def all_mailboxes(self) -> Iterator[Mailbox]:
        for row in self.s.session.execute("SELECT id, mailboxbase, name, uidvalidity FROM mailbox"):
            yield _row_to_mailbox(row)
