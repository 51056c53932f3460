"""James's ``UsernameChangeTask`` (``POST /users/{old}/rename/{new}?action=rename``): move what the
old name owns to the new one.

James's ``UsernameChangeTaskStep`` for the stores this server has, with James's names and
priorities. Each step is idempotent: what was moved is no longer under the old name, so a re-run,
or ``fromStep`` the failed one, finishes the job.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mailserver.mailbox.errors import MailboxNotFound
from mailserver.mailbox.manager import MailboxManager
from mailserver.mailbox.subscriptions import SubscriptionStore
from mailserver.model.acl import RIGHTS
from mailserver.model.address import Username
from mailserver.model.mailbox import DELIMITER, MailboxPath
from mailserver.model.quota import LimitKey, QuotaRoot, QuotaType
from mailserver.rrt.api import RecipientRewriteTable
from mailserver.rrt.mapping import Mapping, MappingSource, MappingType
from mailserver.tasks.api import Result, Task
from mailserver.tasks.builtin.user_data import Step, StepPerformer, UserDataParts
from mailserver.tasks.registry import TaskRegistry
from mailserver.users.delegation import DelegationStore


def change_forwards(rrt: RecipientRewriteTable) -> Callable[[Username, Username], None]:
    """The old name's forwards become the new name's (a self-forward, kept copy, stays one), then
    the old name forwards to the new one (James's ``ForwardUsernameChangeTaskStep``)."""
    def run(old: Username, new: Username) -> None:
        old_source, new_source = MappingSource.from_address(old.value), MappingSource.from_address(new.value)
        for mapping in rrt.get_stored_mappings(old_source):
            if mapping.type is not MappingType.FORWARD or mapping.value.lower() == new.value.lower():
                continue   # the redirection an earlier run left stays as it is
            own = mapping.value.lower() == old.value.lower()
            # A set: a re-run adds nothing.
            rrt.add_mapping(new_source, Mapping.forward(new.value if own else mapping.value))
            rrt.remove_mapping(old_source, mapping)
        rrt.add_mapping(old_source, Mapping.forward(new.value))
    return run


def change_delegation(delegation: DelegationStore) -> Callable[[Username, Username], None]:
    def run(old: Username, new: Username) -> None:
        for delegate in delegation.authorized_users(old):
            delegation.add_authorized_user(new, delegate)
            delegation.remove_authorized_user(old, delegate)
        for base in delegation.delegated_users(old):
            delegation.add_authorized_user(base, new)
            delegation.remove_authorized_user(base, old)
    return run


def change_mailboxes(mailboxes: MailboxManager,
                     subscriptions: SubscriptionStore | None) -> Callable[[Username, Username], None]:
    """James's ``MailboxUsernameChangeTaskStep``: deepest first, so each old mailbox is a leaf when
    its turn comes; renamed to the new name (keeping its id) when the new name has no mailbox
    there, else its messages moved into that one (not checked against quota, as James) and the
    emptied old one deleted. Then the subscriptions follow."""
    def run(old: Username, new: Username) -> None:
        owned = sorted((m.path for m in mailboxes.list_mailboxes(old)),
                       key=lambda path: path.name.count(DELIMITER), reverse=True)
        for path in owned:
            try:
                if not mailboxes.mailbox_exists(MailboxPath(path.namespace, new, path.name)):
                    mailboxes.rename_to_user(path, new)
                    continue
                mailboxes.move(path, MailboxPath(path.namespace, new, path.name), check_quota=False)
                mailboxes.delete_mailbox(path, recursive=True)
            except MailboxNotFound:
                pass   # gone meanwhile: nothing left to move
        if subscriptions is not None:
            for name in subscriptions.subscriptions(old):
                subscriptions.subscribe(new, name)
                subscriptions.unsubscribe(old, name)
    return run


def change_acl(mailboxes: MailboxManager) -> Callable[[Username, Username], None]:
    """James's ``ACLUsernameChangeTaskStep``: on every other user's mailbox the old name may look
    up, its rights are added to the new name's, then its entry removed."""
    def run(old: Username, new: Username) -> None:
        for mailbox in mailboxes.shared_with(old):
            try:
                entries = mailboxes.get_acl(mailbox.path)
                rights = entries.get(old.value, "")
                if rights:
                    granted = set(entries.get(new.value, "")) | set(rights)
                    merged = "".join(right for right in RIGHTS if right in granted)
                    mailboxes.set_rights(mailbox.path, new.value, merged)
                mailboxes.set_rights(mailbox.path, old.value, "")
            except MailboxNotFound:
                pass   # deleted meanwhile: no right left to move
    return run


def change_quota(mailboxes: MailboxManager) -> Callable[[Username, Username], None]:
    """The old name's own limits (user scope) are set on the new name, as James's step."""
    def run(old: Username, new: Username) -> None:
        limits = mailboxes.quota.defined_limits(LimitKey.user(QuotaRoot.for_user(old)))
        target = LimitKey.user(QuotaRoot.for_user(new))
        for quota_type, value in ((QuotaType.COUNT, limits.count), (QuotaType.SIZE, limits.size)):
            if value is not None:
                mailboxes.quota.set_limit(target, quota_type, value)
    return run


def rename_steps(parts: UserDataParts) -> list[Step]:
    steps = [Step("ForwardUsernameChangeTaskStep", 0, change_forwards(parts.rrt))]
    if parts.delegation is not None:
        steps.append(Step("DelegationUsernameChangeTaskStep", 1, change_delegation(parts.delegation)))
    if parts.mailboxes is not None:
        steps.append(Step("MailboxUsernameChangeTaskStep", 2, change_mailboxes(parts.mailboxes, parts.subscriptions)))
        steps.append(Step("ACLUsernameChangeTaskStep", 3, change_acl(parts.mailboxes)))
        steps.append(Step("QuotaUsernameChangeTaskStep", 3, change_quota(parts.mailboxes)))
    return sorted(steps, key=lambda step: step.priority)


class UsernameChangeTask(Task):
    type = "UsernameChangeTask"

    def __init__(self, parts: UserDataParts, old: Username, new: Username, from_step: str | None = None) -> None:
        self.old, self.new, self.from_step = old, new, from_step
        self.performer = StepPerformer(rename_steps(parts), from_step)

    def run(self) -> Result:
        return Result.COMPLETED if self.performer.perform(self.old, self.new) else Result.FAILED

    def parameters(self) -> dict[str, Any]:
        return {"oldUser": self.old.value, "newUser": self.new.value, "fromStep": self.from_step}

    def additional_information(self) -> dict[str, Any]:
        info: dict[str, Any] = {"oldUser": self.old.value, "newUser": self.new.value,
                                "status": {name: state.value for name, state in self.performer.states.items()}}
        if self.from_step is not None:
            info["fromStep"] = self.from_step
        return info


def register(registry: TaskRegistry, parts: UserDataParts) -> None:
    registry.register(UsernameChangeTask.type, lambda p: UsernameChangeTask(
        parts, Username.of(p["oldUser"]), Username.of(p["newUser"]), p.get("fromStep")))
