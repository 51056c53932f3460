"""James's ``IdentityRepository``: the server-set identities merged with the stored ones.

A stored identity shows only while its address is one the user may send from. One stored under
a server-set identity's id is that identity's modification (James keeps deltas of the
server-set identities this way): it replaces it and stays not deletable.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from mailserver.identities.api import CustomIdentityStore, Identity, server_set
from mailserver.model.address import InvalidAddress, MailAddress, Username

UPDATABLE = frozenset({"name", "reply_to", "bcc", "text_signature", "html_signature", "sort_order"})


class IdentityNotFound(LookupError):
    pass


class ForbiddenDelete(ValueError):
    """A server-set identity cannot be deleted."""


class ForbiddenSendFrom(ValueError):
    """The user may not send from the identity's address."""


class IdentityRepository:
    def __init__(self, store: CustomIdentityStore, addresses: Callable[[Username], Iterable[MailAddress]]) -> None:
        self.store = store
        self._addresses = addresses

    def server_set(self, user: Username) -> list[Identity]:
        try:
            addresses = sorted(self._addresses(user), key=str)
        except InvalidAddress:   # a user who is no mail address sends from nothing
            return []
        return [server_set(address) for address in addresses]

    def list(self, user: Username) -> list[Identity]:
        defaults = self.server_set(user)
        allowed = {identity.email for identity in defaults}
        custom = {identity.id: identity for identity in self.store.list(user) if identity.email in allowed}
        merged = [replace(custom.pop(d.id), may_delete=False) if d.id in custom else d for d in defaults]
        return merged + list(custom.values())

    def create(self, user: Username, identity: Identity) -> Identity:
        if identity.email not in {d.email for d in self.server_set(user)}:
            raise ForbiddenSendFrom(identity.email)
        self.store.save(user, identity)
        return identity

    def update(self, user: Username, identity_id: uuid.UUID, changes: Mapping[str, object]) -> None:
        """James's ``IdentityUpdateRequest`` (only the ``UPDATABLE`` fields)."""
        if set(changes) - UPDATABLE:
            raise ValueError(f"not updatable: {sorted(set(changes) - UPDATABLE)}")
        defaults = {d.id: d for d in self.server_set(user)}
        allowed = {d.email for d in defaults.values()}
        stored = self.store.find(user, identity_id)
        if stored is None and identity_id in defaults:
            stored = defaults[identity_id]   # its first change is stored under its id
        elif stored is None or (identity_id not in defaults and stored.email not in allowed):
            raise IdentityNotFound(str(identity_id))
        self.store.save(user, replace(stored, **changes))   # type: ignore[arg-type]

    def delete(self, user: Username, ids: Iterable[uuid.UUID]) -> None:
        wanted = list(ids)
        protected = {d.id for d in self.server_set(user)}
        for identity_id in wanted:
            if identity_id in protected:
                raise ForbiddenDelete(str(identity_id))
        self.store.delete(user, wanted)


def default_identity(identities: Iterable[Identity]) -> Identity | None:
    """The one ``?default=true`` answers: the deletable identity of the lowest sort order."""
    deletable = [i for i in identities if i.may_delete]
    return min(deletable, key=lambda i: i.sort_order) if deletable else None
