"""James's ``DeleteUserDataTask`` and ``DeleteUsersDataOfDomainTask``: remove what a user left behind.

The steps are James's ``DeleteUserDataTaskStep`` for the stores this server has, with James's
names and priorities, run lowest priority first. Each step is idempotent (it deletes what it
finds), so a task re-run, or re-run ``fromStep`` the one that failed, finishes the job. James's
steps for stores we do not have (push subscriptions, JMAP filters) are not run;
``docs/compatibility.md`` names them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from mailserver.identities.api import CustomIdentityStore
from mailserver.mailbox.errors import MailboxNotFound
from mailserver.mailbox.manager import MailboxManager
from mailserver.mailbox.subscriptions import SubscriptionStore
from mailserver.model.address import Domain, Username
from mailserver.model.mailbox import DELIMITER
from mailserver.rrt.api import RecipientRewriteTable
from mailserver.rrt.mapping import Mapping, MappingSource
from mailserver.tasks.api import Result, Task
from mailserver.tasks.registry import TaskRegistry
from mailserver.users.api import UsersRepository
from mailserver.users.delegation import DelegationStore
from mailserver.vacation.api import CLEARED, VacationRepository

log = logging.getLogger(__name__)
MAX_STORED_FAILED_USERS = 100   # James's cap on the failed users a domain task reports


class StepState(StrEnum):
    WAITING = "WAITING"
    IN_PROGRESS = "IN_PROGRESS"
    DONE = "DONE"
    FAILED = "FAILED"
    ABORTED = "ABORTED"
    SKIPPED = "SKIPPED"


@dataclass(frozen=True)
class UserDataParts:
    """The stores holding a user's data; a step runs only when its store is given."""

    users: UsersRepository
    rrt: RecipientRewriteTable
    mailboxes: MailboxManager | None = None
    subscriptions: SubscriptionStore | None = None
    delegation: DelegationStore | None = None
    identities: CustomIdentityStore | None = None
    vacations: VacationRepository | None = None


@dataclass(frozen=True)
class Step:
    name: str
    priority: int
    run: Callable[..., None]   # given the task's users: the one deleted, or the old and the new name


class UnknownStep(ValueError):
    pass


def delete_rrt(rrt: RecipientRewriteTable) -> Callable[[Username], None]:
    """The user's own mappings, then the forwards and group memberships naming them."""
    def run(user: Username) -> None:
        if "@" not in user.value:
            return   # a name without domain part (no virtual hosting) is no mapping source
        source = MappingSource.from_address(user.value)
        for mapping in rrt.get_stored_mappings(source):
            rrt.remove_mapping(source, mapping)
        for pointing in (Mapping.forward(user.value), Mapping.group(user.value)):
            for other in rrt.list_sources(pointing):
                rrt.remove_mapping(other, pointing)
    return run


def delete_delegation(delegation: DelegationStore) -> Callable[[Username], None]:
    def run(user: Username) -> None:
        for base in delegation.delegated_users(user):
            delegation.remove_authorized_user(base, user)
        for delegate in delegation.authorized_users(user):
            delegation.remove_authorized_user(user, delegate)
    return run


def delete_identities(identities: CustomIdentityStore) -> Callable[[Username], None]:
    def run(user: Username) -> None:
        identities.delete(user, [identity.id for identity in identities.list(user)])
    return run


def delete_mailboxes(mailboxes: MailboxManager, subscriptions: SubscriptionStore | None) -> Callable[[Username], None]:
    """James's ``MailboxUserDeletionTaskStep``: every mailbox of the user, deepest first, through the
    manager (events, quota, vault hook), the user's rights on the other users' mailboxes they may
    look up revoked, and the subscriptions dropped."""
    def run(user: Username) -> None:
        owned = sorted((m.path for m in mailboxes.list_mailboxes(user)),
                       key=lambda path: path.name.count(DELIMITER), reverse=True)
        for path in owned:
            try:
                mailboxes.delete_mailbox(path, recursive=True)
            except MailboxNotFound:
                pass   # deleted meanwhile: what was asked is done
        for shared in mailboxes.shared_with(user):
            try:
                mailboxes.set_rights(shared.path, user.value, "")
            except MailboxNotFound:
                pass
        if subscriptions is not None:
            for name in subscriptions.subscriptions(user):
                subscriptions.unsubscribe(user, name)
    return run


def delete_vacation(vacations: VacationRepository) -> Callable[[Username], None]:
    """James's ``VacationDeleteUserTaskStep``: the vacation disabled and every other field removed
    (James's repository has no delete: the row stays, emptied)."""
    def run(user: Username) -> None:
        vacations.modify(user.value, CLEARED)
    return run


def deletion_steps(parts: UserDataParts) -> list[Step]:
    """James's step names and priorities (``RecipientRewriteTableUserDeletionTaskStep``...)."""
    steps = [Step("RecipientRewriteTableUserDeletionTaskStep", 0, delete_rrt(parts.rrt))]
    if parts.delegation is not None:
        steps.append(Step("DelegationUserDeletionTaskStep", 1, delete_delegation(parts.delegation)))
    if parts.identities is not None:
        steps.append(Step("IdentityUserDeletionTaskStep", 1, delete_identities(parts.identities)))
    if parts.vacations is not None:
        steps.append(Step("VacationDeleteUserTaskStep", 4, delete_vacation(parts.vacations)))
    if parts.mailboxes is not None:
        steps.append(Step("MailboxUserDeletionTaskStep", 5, delete_mailboxes(parts.mailboxes, parts.subscriptions)))
    return sorted(steps, key=lambda step: step.priority)


class StepPerformer:
    """James's ``DeleteUserDataService.Performer`` (and ``UsernameChangeService``'s): steps by
    priority, states reported per step; from ``from_step`` on, the earlier ones SKIPPED; after a
    failure the rest ABORTED."""

    def __init__(self, steps: list[Step], from_step: str | None = None) -> None:
        self.steps = steps
        self.states = {step.name: StepState.WAITING for step in steps}
        self.start = None if from_step is None else self.priority_of(from_step)

    def priority_of(self, name: str) -> int:
        for step in self.steps:
            if step.name == name:
                return step.priority
        raise UnknownStep(f"Starting step not found: {name}")

    def perform(self, *users: Username) -> bool:
        for step in self.steps:
            if self.start is not None and step.priority < self.start:
                self.states[step.name] = StepState.SKIPPED
        for step in self.steps:
            if self.states[step.name] is StepState.SKIPPED:
                continue
            self.states[step.name] = StepState.IN_PROGRESS
            try:
                step.run(*users)
            except Exception:
                log.exception("step %s failed for %s", step.name, users)
                self.states[step.name] = StepState.FAILED
                for name, state in self.states.items():
                    if state in (StepState.WAITING, StepState.IN_PROGRESS):
                        self.states[name] = StepState.ABORTED
                return False
            self.states[step.name] = StepState.DONE
        return True


class DeleteUserDataTask(Task):
    type = "DeleteUserDataTask"

    def __init__(self, parts: UserDataParts, username: Username, from_step: str | None = None) -> None:
        self.username = username
        self.from_step = from_step
        self.performer = StepPerformer(deletion_steps(parts), from_step)

    def run(self) -> Result:
        # James's PARTIAL, which its task manager reports as failed: the states tell which step,
        # ``fromStep`` resumes there.
        return Result.COMPLETED if self.performer.perform(self.username) else Result.FAILED

    def parameters(self) -> dict[str, Any]:
        return {"username": self.username.value, "fromStep": self.from_step}

    def additional_information(self) -> dict[str, Any]:
        info: dict[str, Any] = {"username": self.username.value,
                                "status": {name: state.value for name, state in self.performer.states.items()}}
        if self.from_step is not None:
            info["fromStep"] = self.from_step
        return info


class DeleteUsersDataOfDomainTask(Task):
    """Every user of the domain through the same steps; a failed user is counted and named (100 at most)."""

    type = "DeleteUsersDataOfDomainTask"

    def __init__(self, parts: UserDataParts, domain: Domain) -> None:
        self.parts = parts
        self.domain = domain
        self.succeeded = 0
        self.failed: list[str] = []
        self.failed_count = 0

    def run(self) -> Result:
        for user in list(self.parts.users.list_users_of_domain(self.domain)):
            if StepPerformer(deletion_steps(self.parts)).perform(user):
                self.succeeded += 1
            else:
                self.failed_count += 1
                if len(self.failed) < MAX_STORED_FAILED_USERS:
                    self.failed.append(user.value)
        return Result.FAILED if self.failed_count else Result.COMPLETED

    def parameters(self) -> dict[str, Any]:
        return {"domain": self.domain.name}

    def additional_information(self) -> dict[str, Any]:
        return {"domain": self.domain.name, "successfulUsersCount": self.succeeded,
                "failedUsersCount": self.failed_count, "failedUsers": list(self.failed)}


def register(registry: TaskRegistry, parts: UserDataParts) -> None:
    registry.register(DeleteUserDataTask.type, lambda p: DeleteUserDataTask(
        parts, Username.of(p["username"]), p.get("fromStep")))
    registry.register(DeleteUsersDataOfDomainTask.type, lambda p: DeleteUsersDataOfDomainTask(
        parts, Domain.of(p["domain"])))
