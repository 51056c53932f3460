"""James's ``MailboxChangeListener``: turns mailbox events into JMAP changes.

- MailboxAdded: the mailbox created; MailboxRenamed, MailboxACLUpdated, (un)subscription: updated;
  MailboxDeletion: destroyed.
- Added: the emails created (appended) or updated (copied or moved in), and the mailbox's counts updated.
- FlagsUpdated: ``\\Deleted`` set destroys the email and unset creates it again (as James); other
  changes but ``\\Recent`` update it, and ``\\Seen`` the mailbox's counts.
- Expunged: the emails without ``\\Deleted`` are updated while another mailbox of the user still
  holds them, else destroyed; the mailbox's counts are updated.

The owner's changes are written plainly; the same changes are written for each user the mailbox
is shared with, marked delegated (read only with the shares capability). The group is James's, so
that a mixed deployment shares its queue. Handling an event again writes its changes again under
new states: a client then sees the same ids twice, which ``/changes`` allows.

Once an event's changes are stored, each user they were written for gets one ``StateChangeEvent``
(its new Mailbox and Email states) dispatched to their ``AccountIdRegistrationKey`` on the push bus,
where their EventSource and WebSocket connections listen, on any node (as James).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from dataclasses import replace

from mailserver.events.api import EventBus, EventListener
from mailserver.jmap.changes.model import Change, new_state
from mailserver.jmap.changes.repository import ChangeRepository
from mailserver.mailbox.acl import AclStore
from mailserver.mailbox.errors import MailboxNotFound
from mailserver.mailbox.manager import MailboxManager
from mailserver.model import events
from mailserver.model.acl import is_positive_user_entry
from mailserver.model.address import Username
from mailserver.model.flags import Flags, SystemFlag
from mailserver.model.ids import MailboxId, MessageId
from mailserver.model.state_change import StateChangeEvent

log = logging.getLogger(__name__)

GROUP = "org.apache.james.jmap.change.MailboxChangeListenerGroup"
HANDLED = (events.MailboxAdded, events.MailboxRenamed, events.MailboxACLUpdated, events.MailboxDeletion,
           events.Added, events.FlagsUpdated, events.Expunged, events.MailboxSubscribedEvent,
           events.MailboxUnSubscribedEvent)


class MailboxChangeListener(EventListener):
    group = GROUP

    def __init__(self, mailbox_changes: ChangeRepository, email_changes: ChangeRepository, manager: MailboxManager,
                 acl: AclStore, push: EventBus | None = None) -> None:
        self.mailbox_changes, self.email_changes = mailbox_changes, email_changes
        self.manager, self.acl = manager, acl
        self.push = push   # None: states are not pushed

    def accepts(self, event: events.MailboxEvent) -> bool:
        return isinstance(event, HANDLED)

    def handle(self, event: events.MailboxEvent) -> None:
        saved = _Saved(self.mailbox_changes, self.email_changes)
        self._record(event, saved)
        if self.push is not None and saved.states:
            try:
                self.push.dispatch_to_keys(*saved.state_change_events())
            except Exception:   # the changes are stored: a client still sees them with /changes
                log.warning("state changes of %s %s not pushed", event.type_name, event.event_id, exc_info=True)

    def _record(self, event: events.MailboxEvent, saved: _Saved) -> None:
        owner = str(event.user)
        if isinstance(event, events.MailboxAdded):
            self._mailboxes(saved, [Change(owner, created=(event.mailbox_id.value,))])
        elif isinstance(event, events.MailboxSubscribedEvent | events.MailboxUnSubscribedEvent):
            self._mailboxes(saved, [Change(owner, updated=(event.mailbox_id.value,))])
        elif isinstance(event, events.MailboxRenamed):
            self._mailboxes(saved, _for_sharees(Change(owner, updated=(event.mailbox_id.value,)),
                                         self._sharees(event.mailbox_id)))
        elif isinstance(event, events.MailboxACLUpdated):
            _, removed = event.changes()
            users = [*self._sharees(event.mailbox_id), *(k for k in removed if is_positive_user_entry(k))]
            self._mailboxes(saved, _for_sharees(Change(owner, updated=(event.mailbox_id.value,)), users))
        elif isinstance(event, events.MailboxDeletion):
            users = [k for k in event.acl if is_positive_user_entry(k)]
            self._mailboxes(saved, _for_sharees(Change(owner, destroyed=(event.mailbox_id.value,)), users))
        elif isinstance(event, events.Added):
            ids = tuple(dict.fromkeys(m.message_id.value for m in event.added))
            emails = Change(owner, created=ids) if event.is_appended else Change(owner, updated=ids)
            self._both(saved, emails, Change(owner, updated=(event.mailbox_id.value,), is_count_change=True),
                       self._sharees(event.mailbox_id))
        elif isinstance(event, events.FlagsUpdated):
            self._flags(event, saved)
        elif isinstance(event, events.Expunged):
            self._expunged(event, saved)

    def _flags(self, event: events.FlagsUpdated, saved: _Saved) -> None:
        created: list[uuid.UUID] = []
        updated: list[uuid.UUID] = []
        destroyed: list[uuid.UUID] = []
        counts = False
        for flags in event.updated:
            if flags.message_id is None:
                continue
            old, new, message = flags.old_flags, flags.new_flags, flags.message_id.value
            if new.has(SystemFlag.DELETED) and not old.has(SystemFlag.DELETED):
                destroyed.append(message)
                counts = True
            elif old.has(SystemFlag.DELETED) and not new.has(SystemFlag.DELETED):
                created.append(message)
                counts = True
            elif old.has(SystemFlag.DELETED) or _without_recent(old) == _without_recent(new):
                continue
            else:
                updated.append(message)
                counts = counts or old.has(SystemFlag.SEEN) != new.has(SystemFlag.SEEN)
        owner = str(event.user)
        emails = Change(owner, created=_unique(created), updated=_unique(updated), destroyed=_unique(destroyed))
        mailbox = Change(owner, updated=(event.mailbox_id.value,) if counts else (), is_count_change=True)
        if not (emails.is_noop and mailbox.is_noop):
            self._both(saved, emails, mailbox, self._sharees(event.mailbox_id))

    def _expunged(self, event: events.Expunged, saved: _Saved) -> None:
        changed = _unique(m.message_id.value for m in event.expunged if not m.flags.has(SystemFlag.DELETED))
        if not changed:
            return
        state = new_state()   # one state for the owner and the sharees, as James
        for user, delegated in [(str(event.user), False), *((s, True) for s in self._sharees(event.mailbox_id))]:
            still = {i for i in changed if self._accessible(user, MessageId(i))}
            saved.email(Change(user, updated=tuple(i for i in changed if i in still),
                                           destroyed=tuple(i for i in changed if i not in still),
                                           is_delegated=delegated, state=state))
            saved.mailbox(Change(user, updated=(event.mailbox_id.value,), is_count_change=True,
                                             is_delegated=delegated, state=state))

    @staticmethod
    def _mailboxes(saved: _Saved, changes: Iterable[Change]) -> None:
        for change in changes:
            saved.mailbox(change)

    @staticmethod
    def _both(saved: _Saved, emails: Change, mailbox: Change, sharees: list[str]) -> None:
        for change in _for_sharees(emails, sharees):
            if not change.is_noop:
                saved.email(change)
        for change in _for_sharees(mailbox, sharees):
            if not change.is_noop:
                saved.mailbox(change)

    def _sharees(self, mailbox_id: MailboxId) -> list[str]:
        try:
            return [k for k in self.acl.get(mailbox_id) if is_positive_user_entry(k)]
        except Exception:   # as James: a change is still recorded for the owner
            log.warning("could not read the sharees of mailbox %s", mailbox_id, exc_info=True)
            return []

    def _accessible(self, user: str, message_id: MessageId) -> bool:
        """Whether ``user`` still reads the message somewhere: in a mailbox of theirs, or shared with read."""
        for copy in self.manager.find_message(message_id):
            try:
                owner = self.manager.get_mailbox_by_id(copy.mailbox_id).path.user
            except MailboxNotFound:
                continue
            if owner == Username.of(user) or "r" in self.acl.get(copy.mailbox_id).get(user, ""):
                return True
        return False


class _Saved:
    """Stores an event's changes and keeps, per user, the last state written of each type."""

    def __init__(self, mailboxes: ChangeRepository, emails: ChangeRepository) -> None:
        self.mailboxes, self.emails = mailboxes, emails
        self.states: dict[str, dict[str, str]] = {}

    def mailbox(self, change: Change) -> None:
        self.mailboxes.save(change)
        self.states.setdefault(change.account_id, {})["Mailbox"] = str(change.state)

    def email(self, change: Change) -> None:
        self.emails.save(change)
        self.states.setdefault(change.account_id, {})["Email"] = str(change.state)

    def state_change_events(self) -> list[StateChangeEvent]:
        return [StateChangeEvent(user=Username.of(user), type_states=states) for user, states in self.states.items()]


def _for_sharees(change: Change, sharees: Iterable[str]) -> list[Change]:
    """The owner's change, then one per sharee with a state of its own, marked delegated."""
    return [change, *(replace(change, account_id=s, is_delegated=True, state=new_state())
                      for s in dict.fromkeys(sharees) if s != change.account_id)]


def _without_recent(flags: Flags) -> Flags:
    return Flags(flags.system - {SystemFlag.RECENT}, flags.user)


def _unique(ids: Iterable[uuid.UUID]) -> tuple[uuid.UUID, ...]:
    return tuple(dict.fromkeys(ids))
