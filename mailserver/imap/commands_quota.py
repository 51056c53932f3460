"""QUOTA (RFC 9208, as James serves RFC 2087): GETQUOTAROOT, GETQUOTA and a refused SETQUOTA, on
the quotas the mailbox manager enforces (a mixin of ``Session``).

As James: one quota root per user, ``#private&<user>``, owning all the user's mailboxes; a
resource is reported only when it has a limit (``MESSAGE`` in messages, ``STORAGE`` in KiB, both
rounded down); another user's root is refused with NO, and SETQUOTA is for administrators
(webadmin), NO over IMAP.
"""

from __future__ import annotations

from mailserver.imap.commands_mailboxes import wire_name
from mailserver.imap.parser import Args, Command
from mailserver.imap.session_base import No, SessionBase
from mailserver.model.quota import QuotaLimits, QuotaRoot, QuotaUsage

KIB = 1024


def quota_lines(root: QuotaRoot, usage: QuotaUsage, limits: QuotaLimits) -> bytes:
    """The ``* QUOTA`` lines of ``root``: one per limited resource, James's order (MESSAGE, STORAGE)."""
    name = root.value.encode()
    lines = b""
    if limits.count is not None and limits.count >= 0:
        lines += b"* QUOTA " + name + b" (MESSAGE %d %d)\r\n" % (usage.count, limits.count)
    if limits.size is not None and limits.size >= 0:
        lines += b"* QUOTA " + name + b" (STORAGE %d %d)\r\n" % (usage.size // KIB, limits.size // KIB)
    return lines


class QuotaCommands(SessionBase):
    def _own_root(self) -> QuotaRoot:
        assert self.user is not None
        return QuotaRoot.for_user(self.user)

    def _quota(self, root: QuotaRoot) -> bytes:
        """Blocking: the ``* QUOTA`` lines of ``root``."""
        return quota_lines(root, self.manager.quota.current(root), self.manager.quota.limits(root))

    async def cmd_getquotaroot(self, command: Command, args: Args) -> str:
        name = self._name(args)
        args.end()
        path, root = self.path(name), self._own_root()

        def answer() -> bytes:
            self.manager.get_mailbox(path)   # MailboxNotFound: NO [NONEXISTENT]
            return self._quota(root)

        lines = await self.blocking(answer)
        await self.send(b"* QUOTAROOT " + wire_name(name) + b" " + root.value.encode() + b"\r\n" + lines)
        return "OK GETQUOTAROOT completed"

    async def cmd_getquota(self, command: Command, args: Args) -> str:
        asked = args.astring("quota root")
        args.end()
        root = self._own_root()
        if asked != root.value:
            raise No(f"no access to quota root {asked}", "NOPERM")
        await self.send(await self.blocking(self._quota, root))
        return "OK GETQUOTA completed"

    async def cmd_setquota(self, command: Command, args: Args) -> str:
        args.rest()
        raise No("quotas are set by an administrator (webadmin), not over IMAP", "NOPERM")
