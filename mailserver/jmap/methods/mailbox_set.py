"""``Mailbox/set`` (RFC 8621 2.5) on the mailbox manager, as James's ``MailboxSetMethod``.

Creations, then updates, then destroys. A creation takes ``name``, ``parentId`` (an id or a
``#creationId``) and ``isSubscribed`` (subscribed unless false); an update renames and moves
(``name``, ``parentId``, children following) and subscribes (``isSubscribed``, null meaning
subscribed, as for the owner in James); a destroy refuses a mailbox with children
(``mailboxHasChild``) and, unless ``onDestroyRemoveEmails``, one holding emails
(``mailboxHasEmail``). A mailbox with a role may not be renamed, moved nor destroyed
(``invalidArguments``).
"""

from __future__ import annotations

from typing import Any

from mailserver.jmap.account import CallContext
from mailserver.jmap.errors import MethodError
from mailserver.jmap.methods.arguments import boolean, only, set_objects
from mailserver.jmap.methods.mailboxes import OWNER_RIGHTS
from mailserver.jmap.methods.set_errors import SetError
from mailserver.mailbox.errors import InboxCannotBeRenamedOrDeleted, MailboxExists, MailboxNotFound
from mailserver.mailbox.roles import OTHER_SORT_ORDER, role_of
from mailserver.model.mailbox import DELIMITER, InvalidMailboxName, Mailbox, MailboxPath

ARGUMENTS = {"accountId", "ifInState", "create", "update", "destroy", "onDestroyRemoveEmails"}
SERVER_SET = frozenset({"id", "sortOrder", "role", "totalEmails", "totalThreads", "unreadEmails", "unreadThreads",
                        "myRights"})
ASSIGNABLE = frozenset({"name", "parentId", "isSubscribed"})
SYSTEM_CHANGE = "Invalid change to a system mailbox"


def set_(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
    only(arguments, ARGUMENTS)
    account = context.check_account(arguments)
    create, update, destroy = set_objects(arguments, context.limits.max_objects_in_set)
    remove_emails = boolean(arguments, "onDestroyRemoveEmails")
    old_state = context.mailbox_state()
    if_in_state = arguments.get("ifInState")
    if if_in_state is not None and if_in_state != old_state:
        raise MethodError("stateMismatch")
    store = _Mailboxes(context)
    created: dict[str, Any] = {}
    not_created: dict[str, Any] = {}
    for creation_id, request in create.items():
        try:
            created[creation_id] = store.create(request)
            context.created_ids[creation_id] = created[creation_id]["id"]
        except SetError as error:
            not_created[creation_id] = error.body
    updated: dict[str, Any] = {}
    not_updated: dict[str, Any] = {}
    for mailbox_id, patch in update.items():
        mailbox_id = context.resolve_id(mailbox_id)
        try:
            store.update(mailbox_id, patch)
            updated[mailbox_id] = {}
        except SetError as error:
            not_updated[mailbox_id] = error.body
    destroyed: list[str] = []
    not_destroyed: dict[str, Any] = {}
    for mailbox_id in map(context.resolve_id, destroy):
        try:
            store.destroy(mailbox_id, remove_emails)
            destroyed.append(mailbox_id)
        except SetError as error:
            not_destroyed[mailbox_id] = error.body
    outcomes = {"created": created, "notCreated": not_created, "updated": updated, "notUpdated": not_updated,
                "destroyed": destroyed, "notDestroyed": not_destroyed}
    return {"accountId": account, "oldState": old_state, "newState": context.mailbox_state(),
            **{k: v or None for k, v in outcomes.items()}}



class _Mailboxes:
    """The user's personal mailboxes, read again after each change (a rename moves children)."""

    def __init__(self, context: CallContext) -> None:
        self.context, self.manager, self.user = context, context.services.manager, context.user
        self.subscriptions = context.services.subscriptions

    def find(self, mailbox_id: str) -> Mailbox | None:
        return next((m for m in self.manager.list_mailboxes(self.user) if str(m.id) == mailbox_id), None)

    def create(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, dict):
            raise SetError("invalidArguments", "a Mailbox is an object")
        unknown = sorted(set(request) - ASSIGNABLE - SERVER_SET)
        if unknown:
            raise SetError("invalidArguments", "Some unknown properties were specified", unknown)
        server_set = sorted(set(request) & SERVER_SET)
        if server_set:
            raise SetError("invalidArguments", "Some server-set properties were specified", server_set)
        name, subscribed = request.get("name"), request.get("isSubscribed")
        if not isinstance(name, str) or not name:
            raise SetError("invalidArguments", "name is a non-empty string", ["name"])
        if subscribed is not None and not isinstance(subscribed, bool):
            raise SetError("invalidArguments", "isSubscribed is a boolean", ["isSubscribed"])
        _check_name(name, ["name"])
        parent_id = request.get("parentId")
        if parent_id is None:
            path = MailboxPath.of(self.user, name)
        else:
            parent = self.find(self.context.resolve_id(parent_id)) if isinstance(parent_id, str) else None
            if parent is None:
                raise SetError("invalidArguments", f"{parent_id} can not be found", ["parentId"])
            path = parent.path.child(name)
        try:
            mailbox_id = self.manager.create_mailbox(path)
        except MailboxExists as error:
            raise SetError("invalidArguments", str(error), ["name"]) from None
        except InvalidMailboxName as error:
            raise SetError("invalidArguments", str(error), ["name"]) from None
        if subscribed is not False:
            self._subscribe(path.name, True)
        answer = {"id": str(mailbox_id), "sortOrder": OTHER_SORT_ORDER, "role": None, "totalEmails": 0,
                  "unreadEmails": 0, "totalThreads": 0, "unreadThreads": 0, "myRights": dict(OWNER_RIGHTS)}
        if subscribed is None:   # a default the client did not see, as James answers it
            answer["isSubscribed"] = True
        return answer

    def update(self, mailbox_id: str, patch: Any) -> None:
        if not isinstance(patch, dict):
            raise SetError("invalidPatch", "a patch is an object")
        mailbox = self.find(mailbox_id)
        if mailbox is None:
            raise SetError("notFound", f"{mailbox_id} can not be found")
        for prop in patch:
            if prop in SERVER_SET:
                raise SetError("invalidArguments", "Can not modify server-set properties", [prop])
            if prop not in ASSIGNABLE:
                raise SetError("invalidArguments", f"{prop} property do not exist thus cannot be updated", [prop])
        path_change = sorted({"name", "parentId"} & set(patch))
        target = self._target(mailbox, patch) if path_change else mailbox.path
        subscribed = patch.get("isSubscribed", True)
        if not isinstance(subscribed, bool | None):
            raise SetError("invalidArguments", "Expecting a JSON boolean as an argument", ["isSubscribed"])
        if target != mailbox.path:
            if role_of(mailbox) is not None:
                raise SetError("invalidArguments", SYSTEM_CHANGE, path_change)
            try:
                self.manager.rename_mailbox(mailbox.path, target)
            except InboxCannotBeRenamedOrDeleted:
                raise SetError("invalidArguments", SYSTEM_CHANGE, path_change) from None
            except (MailboxExists, InvalidMailboxName) as error:
                raise SetError("invalidArguments", str(error), path_change) from None
            self._rename_subscriptions(mailbox.path, target)
        if "isSubscribed" in patch:
            self._subscribe(target.name, subscribed is not False)

    def _target(self, mailbox: Mailbox, patch: dict[str, Any]) -> MailboxPath:
        """Where the patch puts the mailbox: under ``parentId`` (null: top level), called ``name``."""
        leaf = mailbox.path.name.rsplit(DELIMITER, 1)[-1]
        parent_name = mailbox.path.name.rsplit(DELIMITER, 1)[0] if DELIMITER in mailbox.path.name else None
        if "name" in patch:
            if not isinstance(patch["name"], str):
                raise SetError("invalidArguments", "Expecting a JSON string as an argument", ["name"])
            leaf = patch["name"]
            _check_name(leaf, ["name"])
        if "parentId" in patch:
            parent_id = patch["parentId"]
            if parent_id is None:
                parent_name = None
            else:
                if not isinstance(parent_id, str):
                    raise SetError("invalidArguments", "Expecting a JSON string or null as an argument",
                                   ["parentId"])
                parent = self.find(self.context.resolve_id(parent_id))
                if parent is None:
                    raise SetError("notFound", f"{parent_id} can not be found")
                if parent.id == mailbox.id or parent.path.is_descendant_of(mailbox.path):
                    raise SetError("invalidArguments", "A mailbox parentId property can not be set to itself or "
                                   "one of its child", ["parentId"])
                parent_name = parent.path.name
        return MailboxPath.of(self.user, leaf if parent_name is None else f"{parent_name}{DELIMITER}{leaf}")

    def destroy(self, mailbox_id: str, remove_emails: bool) -> None:
        mailbox = self.find(mailbox_id)
        if mailbox is None:
            raise SetError("notFound", f"{mailbox_id} can not be found")
        if role_of(mailbox) is not None:
            raise SetError("invalidArguments", "System mailboxes cannot be destroyed")
        if any(m.path.is_descendant_of(mailbox.path) for m in self.manager.list_mailboxes(self.user)):
            raise SetError("mailboxHasChild", f"{mailbox_id} has child mailboxes")
        if not remove_emails and self.manager.mailbox_state(mailbox.path).count:
            raise SetError("mailboxHasEmail", f"{mailbox_id} is not empty")
        try:
            self.manager.delete_mailbox(mailbox.path)
        except MailboxNotFound:
            raise SetError("notFound", f"{mailbox_id} can not be found") from None
        self._subscribe(mailbox.path.name, False)

    def _subscribe(self, name: str, subscribed: bool) -> None:
        if self.subscriptions is None:
            return
        if subscribed:
            self.subscriptions.subscribe(self.user, name)
        else:
            self.subscriptions.unsubscribe(self.user, name)

    def _rename_subscriptions(self, source: MailboxPath, target: MailboxPath) -> None:
        """Subscriptions follow a renamed mailbox and its children (James's ``RENAME_SUBSCRIPTIONS``)."""
        if self.subscriptions is None:
            return
        for name in self.subscriptions.subscriptions(self.user):
            old = MailboxPath.of(self.user, name)
            if old == source or old.is_descendant_of(source):
                self.subscriptions.unsubscribe(self.user, name)
                self.subscriptions.subscribe(self.user, old.renamed_under(source, target).name)


def _check_name(name: str, properties: list[str]) -> None:
    if not name or DELIMITER in name:
        raise SetError("invalidArguments", f"The mailbox '{name}' contains an illegal character: '{DELIMITER}'",
                       properties)
