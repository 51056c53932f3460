"""Which recipients of a local domain RCPT accepts: James's ``ValidRcptHandler``.

Accepting a recipient that does not exist and bouncing later sends the bounce to whatever
sender the client claimed: backscatter. So, as James's ``RecipientValidator`` with its default
policy (``enableRecipientRewriteTable=true``, ``recipientRewriteTableCheck=mappingExists``), a
recipient of a local domain is valid when

* it is an account (``UsersRepository.contains``, the address or its local part without
  virtual hosting), or
* the recipient rewrite table resolves it to something (alias, group, forward, domain alias,
  regex ...). A resolution that fails (an ``error:`` mapping, a loop) counts as a mapping, as in
  James: the mail is accepted and the ``rrt-error`` processor records it;
* or its local part is ``postmaster`` (RFC 5321 4.5.1 requires it; the ``PostmasterAlias``
  mailet delivers it to the configured postmaster when there is no such account). James also
  whitelists ``abuse`` (``PostmasterAbuseRcptHook``); here ``abuse`` must be an account or a
  mapping like any other name, since nothing would deliver it otherwise.

Anything else gets ``550 5.1.1 Unknown user: <address>`` (James's wording). Lookups block
(Cassandra), so the handler runs ``is_valid_local`` on its I/O pool.

How many recipients one message may have is ``SmtpConfig.max_recipients`` (Postfix's
``smtpd_recipient_limit``, 1,000): a RCPT beyond it gets ``452 4.5.3 Too many recipients``
(RFC 5321 4.5.3.1.10) before any lookup, and the mail goes to the recipients already accepted;
the client sends the others in another transaction.
"""

from __future__ import annotations

from mailserver.model.address import InvalidAddress, MailAddress, Username
from mailserver.rrt.resolver import MappingErrorException, RecipientRewriter
from mailserver.users.api import UsersRepository

POSTMASTER = "postmaster"
TOO_MANY_RECIPIENTS = "452 4.5.3 Too many recipients"


def unknown_user(address: MailAddress) -> str:
    return f"550 5.1.1 Unknown user: {address}"


def too_many_recipients(limit: int) -> str:
    return f"{TOO_MANY_RECIPIENTS} (at most {limit} a message)"


class RecipientValidator:
    def __init__(self, users: UsersRepository, rewriter: RecipientRewriter) -> None:
        self.users = users
        self.rewriter = rewriter

    def is_valid_local(self, address: MailAddress) -> bool:
        """Whether mail for ``address`` (of a local domain) can be delivered or routed somewhere."""
        if address.local_part.lower() == POSTMASTER:
            return True
        if self._is_account(address):
            return True
        try:
            return bool(self.rewriter.resolve(address))
        except MappingErrorException:
            return True   # James's mappingExists: an error mapping is a mapping (rrt-error reports it)

    def _is_account(self, address: MailAddress) -> bool:
        try:
            name = str(address) if self.users.virtual_hosting else address.local_part
            return self.users.contains(Username.of(name))
        except InvalidAddress:
            return False
