"""Every method this server answers, with the capability ``using`` must name for it."""

from __future__ import annotations

from mailserver.jmap.account import CallContext
from mailserver.jmap.capabilities import CORE, MAIL, SUBMISSION, VACATION_RESPONSE
from mailserver.jmap.engine import Method
from mailserver.jmap.methods import (
    changes,
    core,
    email_import,
    email_parse,
    email_set,
    email_submission,
    emails,
    identities,
    mailbox_set,
    mailboxes,
    query_changes,
    search_snippets,
    threads,
    vacation_response,
)

METHODS: dict[str, Method[CallContext]] = {
    "Core/echo": Method(CORE, core.echo),
    "Mailbox/get": Method(MAIL, mailboxes.get),
    "Mailbox/changes": Method(MAIL, changes.mailbox_changes),
    "Mailbox/query": Method(MAIL, mailboxes.query),
    "Mailbox/queryChanges": Method(MAIL, query_changes.mailbox_query_changes),
    "Mailbox/set": Method(MAIL, mailbox_set.set_),
    "Email/get": Method(MAIL, emails.get),
    "Email/changes": Method(MAIL, changes.email_changes),
    "Email/query": Method(MAIL, emails.query),
    "Email/queryChanges": Method(MAIL, query_changes.email_query_changes),
    "Email/set": Method(MAIL, email_set.set_),
    "Email/import": Method(MAIL, email_import.import_),
    "Email/parse": Method(MAIL, email_parse.parse),
    "SearchSnippet/get": Method(MAIL, search_snippets.get),
    "Thread/get": Method(MAIL, threads.get),
    "EmailSubmission/set": Method(SUBMISSION, email_submission.set_),
    "Identity/get": Method(SUBMISSION, identities.get),
    "VacationResponse/get": Method(VACATION_RESPONSE, vacation_response.get),
    "VacationResponse/set": Method(VACATION_RESPONSE, vacation_response.set_),
}
