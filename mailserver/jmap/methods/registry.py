"""Every method this server answers, with the capability ``using`` must name for it."""

from __future__ import annotations

from mailserver.jmap.account import CallContext
from mailserver.jmap.capabilities import CORE, MAIL, SUBMISSION
from mailserver.jmap.engine import Method
from mailserver.jmap.methods import (
    changes,
    core,
    email_import,
    email_set,
    email_submission,
    emails,
    identities,
    mailbox_set,
    mailboxes,
    threads,
)

METHODS: dict[str, Method[CallContext]] = {
    "Core/echo": Method(CORE, core.echo),
    "Mailbox/get": Method(MAIL, mailboxes.get),
    "Mailbox/changes": Method(MAIL, changes.mailbox_changes),
    "Mailbox/query": Method(MAIL, mailboxes.query),
    "Mailbox/set": Method(MAIL, mailbox_set.set_),
    "Email/get": Method(MAIL, emails.get),
    "Email/changes": Method(MAIL, changes.email_changes),
    "Email/query": Method(MAIL, emails.query),
    "Email/set": Method(MAIL, email_set.set_),
    "Email/import": Method(MAIL, email_import.import_),
    "Thread/get": Method(MAIL, threads.get),
    "EmailSubmission/set": Method(SUBMISSION, email_submission.set_),
    "Identity/get": Method(SUBMISSION, identities.get),
}
