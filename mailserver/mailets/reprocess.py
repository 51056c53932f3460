"""Reprocess mails kept in a mail repository (James's webadmin ``action=reprocess``).

The mail is marked ``mailRepository-reprocessing`` (the error processor does not bounce such
mails a second time), put in state ``processor`` (its stored state when None), handed to the
target, and only then removed from the repository: a failure in between leaves it stored
(for a container target it is removed just before, and stored back if processing raises).

The target is the spool queue (James: processed later by any spooler worker) or a container
(processed now, in this thread; for tools and tests).
"""

from __future__ import annotations

from mailserver.mailets.container import MailetContainer
from mailserver.model.mail import REPROCESSING, Mail
from mailserver.queue.api import MailQueue
from mailserver.repository.api import MailRepository

Target = MailQueue | MailetContainer


def reprocess(repository: MailRepository, key: str, processor: str | None, target: Target) -> Mail | None:
    """Reprocess one stored mail; None when ``key`` is not in the repository."""
    mail = repository.retrieve(key)
    if mail is None:
        return None
    if processor:
        mail.state = processor
    mail.set_attribute(REPROCESSING, True)
    if isinstance(target, MailetContainer):
        # Removed first: the chain may store the mail again under the same key (error again). The blobs
        # stay until the chain is done reading them (without deduplication remove would delete them):
        # wherever the chain puts the mail (a queue, a repository, a mailbox) it keeps its own blobs.
        original = repository.retrieve(key)
        content = mail.content
        repository.remove(key, delete_content=False)
        try:
            target.service(mail)
        except Exception:
            if original is not None:
                repository.store(original)  # nothing happened: keep it where it was (its own blobs)
            repository.delete_content(content)
            raise
        repository.delete_content(content)
    else:
        target.enqueue(mail)
        repository.remove(key)
    return mail


def reprocess_all(repository: MailRepository, processor: str | None, target: Target) -> int:
    """Reprocess every stored mail; returns how many were handed over."""
    return sum(1 for key in list(repository.list_keys()) if reprocess(repository, key, processor, target))
