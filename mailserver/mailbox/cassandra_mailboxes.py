"""``mailbox`` + ``mailboxPathV3`` with James's write order (CassandraMailboxMapper).

create: path (LWT, the uniqueness guard) then row; rename: new path (LWT), row, old path;
delete: path then row. Additive writes first, so a crash leaves at worst a stale entry that the
mailbox-inconsistency procedure knows how to fix.

The path entry is the truth: a lookup by path that meets an entry without its row (a creation
a crash or a failed write cut short after the LWT) writes the row from the entry, as the
procedure would. Otherwise that mailbox would take mail by path while every lookup by id (search
indexing, a delivery finishing a copy after a crash) took it for deleted.
"""

from __future__ import annotations

import logging
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
# Mailbox ids whose row a lookup has seen: past the first lookup, no extra read (a row is only
# deleted with its path, after which the path lookup finds nothing). Bounded; cleared when full.
ROWS_SEEN_LIMIT = 100_000

log = logging.getLogger(__name__)


def _row_to_mailbox(row: dict) -> Mailbox:
    base = row["mailboxbase"]
    return Mailbox(MailboxId(row["id"]), MailboxPath(base.namespace, Username(base.user), row["name"]),
                   row["uidvalidity"])


class CassandraMailboxStore(MailboxStore):
    def __init__(self, session: CassandraSession) -> None:
        self.s = session
        self._rows_seen: set[MailboxId] = set()

    def _write_row(self, mailbox: Mailbox) -> None:
        p = mailbox.path
        self.s.execute(INSERT_ROW, (mailbox.id.value, (p.namespace, str(p.user)), p.name, mailbox.uid_validity))
        self._remember_row(mailbox.id)

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
        mailbox = self.path_entry(path)
        if mailbox is None or mailbox.id in self._rows_seen:
            return mailbox
        if self.find_by_id(mailbox.id) is None:
            try:
                if not self.finish_creation(mailbox):
                    return None
            except Exception:   # the lookup still answers by path, as before; the next one tries again
                log.warning("could not write the missing row of mailbox %s (%s)", mailbox.id, mailbox.path,
                            exc_info=True)
                return mailbox
        self._remember_row(mailbox.id)
        return mailbox

    def _remember_row(self, mailbox_id: MailboxId) -> None:
        if len(self._rows_seen) >= ROWS_SEEN_LIMIT:
            self._rows_seen.clear()
        self._rows_seen.add(mailbox_id)

    def path_entry(self, path: MailboxPath) -> Mailbox | None:
        """The path entry as stored, its row not checked (the inconsistency tools need it as it is)."""
        row = self.s.one(SELECT_PATH, (path.namespace, str(path.user), path.name))
        return Mailbox(MailboxId(row["mailboxid"]), path, row["uidvalidity"]) if row else None

    def finish_creation(self, mailbox: Mailbox) -> bool:
        """Write the row of a path entry that has none; False when the mailbox was deleted meanwhile.

        The same values a creation still under way would write, so racing it is harmless; a
        deletion that removed the entry since our lookup gets its row removed again.
        """
        self._write_row(mailbox)
        if self.path_entry(mailbox.path) != mailbox:
            self._rows_seen.discard(mailbox.id)
            self.s.execute(DELETE_ROW, (mailbox.id.value,))
            return False
        # Both causes look the same from here: a creation cut short (a crash; worth a warning) or
        # one still under way in another thread (two first deliveries to a new user at once).
        log.warning("mailbox %s (%s) had a path entry but no row (a creation cut short, or under way "
                    "elsewhere): row written", mailbox.id, mailbox.path)
        return True

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
