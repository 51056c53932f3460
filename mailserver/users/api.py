"""The ``UsersRepository`` port: accounts and their passwords (James's UsersRepository).

Rules, the same for every adapter (written once here, adapters only store rows):

* Usernames go through ``Username.of`` (trimmed, lower-cased, validated), so ``Bob@D.tld`` and
  ``bob@d.tld`` are one account.
* With virtual hosting (the default, as in James distributed) a username is ``local@domain``
  and the domain must be a local domain of the ``DomainList`` (``UnknownDomain`` otherwise, the
  error James reports as "Domain does not exist in DomainList"); without virtual hosting a
  username has no ``@domain`` part.
* An empty password is refused (``InvalidPassword``): it would make the account open to anyone
  who knows the name.
* Passwords are stored hashed in James's scheme and format (``passwords.py``); ``verify`` never
  raises for bad credentials (unknown user, malformed name, wrong password are all ``False``) and
  spends the time of a real verification for unknown users, so timing does not reveal which
  accounts exist. A successful login rewrites a hash in another algorithm than the configured one
  (only if the row still holds that hash, so a concurrent password change wins).
* Removing a domain does not remove its users (see ``mailserver.domains.api``).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterator

from mailserver.domains.api import DomainList
from mailserver.model.address import Domain, InvalidAddress, Username
from mailserver.model.passwords import HashedPassword, PasswordHasher

log = logging.getLogger(__name__)


class UsersRepositoryError(Exception):
    pass


class UserAlreadyExists(UsersRepositoryError):
    def __init__(self, username: Username) -> None:
        super().__init__(f"user {username} already exists")
        self.username = username


class UserNotFound(UsersRepositoryError):
    def __init__(self, username: Username) -> None:
        super().__init__(f"user {username} does not exist")
        self.username = username


class UnknownDomain(UsersRepositoryError):
    def __init__(self, username: Username, domain: Domain) -> None:
        super().__init__(f"cannot create user {username}: domain {domain} is not a local domain "
                         f"(add it to the domain list first)")
        self.username = username
        self.domain = domain


class InvalidUsername(InvalidAddress):
    """A well-formed name that does not fit the virtual hosting setting."""


class InvalidPassword(ValueError):
    pass


class UsersRepository(ABC):
    def __init__(self, domains: DomainList | None, *, virtual_hosting: bool = True,
                 hasher: PasswordHasher | None = None) -> None:
        if virtual_hosting and domains is None:
            raise ValueError("virtual hosting needs a DomainList to check user domains against")
        self.domains = domains
        self.virtual_hosting = virtual_hosting
        self.hasher = hasher or PasswordHasher()

    # -- the port -------------------------------------------------------------------------------
    def add_user(self, username: Username | str, password: str) -> Username:
        """Create an account; raises UserAlreadyExists, UnknownDomain, InvalidUsername, InvalidPassword."""
        user = self._valid_username(username)
        _check_password(password)
        domain = user.domain   # None exactly when virtual hosting is off (_valid_username)
        if domain is not None and self.domains is not None and not self.domains.contains(domain):
            raise UnknownDomain(user, domain)
        if not self._insert(user, self.hasher.hash(password, username=user.value)):
            raise UserAlreadyExists(user)
        return user

    def remove_user(self, username: Username | str) -> None:
        user = _as_username(username)
        if not self._delete(user):
            raise UserNotFound(user)

    def contains(self, username: Username | str) -> bool:
        """Raises InvalidAddress for a malformed name (a caller error, unlike ``verify``)."""
        return self._load(_as_username(username)) is not None

    def verify(self, username: Username | str, password: str) -> bool:
        try:
            user = _as_username(username)
        except InvalidAddress:
            return False
        if not isinstance(password, str) or not password:
            return False
        stored = self._load(user)
        if stored is None:
            self.hasher.burn(password)
            return False
        if not self.hasher.verify(password, stored, username=user.value):
            return False
        if self.hasher.needs_rehash(stored):
            self._upgrade(user, stored, password)
        return True

    def _upgrade(self, user: Username, stored: HashedPassword, password: str) -> None:
        try:
            self._replace(user, stored, self.hasher.hash(password, username=user.value))
        except Exception:   # the login itself succeeded; the next one tries again
            log.warning("could not upgrade the password hash of %s", user, exc_info=True)

    def stored_password(self, username: Username | str) -> HashedPassword | None:
        """The row's two password columns (James's ``getUserByName().getHashedPassword()``), or None."""
        return self._load(_as_username(username))

    def update_password(self, username: Username | str, password: str) -> None:
        """Replace the password (hashed with the current policy); raises UserNotFound, InvalidPassword."""
        user = _as_username(username)
        _check_password(password)
        if not self._update(user, self.hasher.hash(password, username=user.value)):
            raise UserNotFound(user)

    def list_users(self) -> Iterator[Username]:
        return self._names()

    def list_users_of_domain(self, domain: Domain) -> Iterator[Username]:
        """James's ``listUsersOfADomainReactive``: users whose domain part is ``domain``; without
        virtual hosting names have no domain part, and every user belongs to every domain."""
        for user in self._names():
            try:
                own = user.domain
            except InvalidAddress:   # a row written by another tool: it belongs to no domain
                continue
            if own == domain if own is not None else not self.virtual_hosting:
                yield user

    def count(self) -> int:
        return sum(1 for _ in self._names())

    # -- helpers --------------------------------------------------------------------------------
    def _valid_username(self, username: Username | str) -> Username:
        user = _as_username(username)
        if self.virtual_hosting and user.domain is None:
            raise InvalidUsername(f"invalid username {user}: virtual hosting needs local@domain")
        if not self.virtual_hosting and user.domain is not None:
            raise InvalidUsername(f"invalid username {user}: a domain part needs virtual hosting")
        return user

    # -- storage primitives (one row per user) ------------------------------------------------------
    @abstractmethod
    def _insert(self, username: Username, password: HashedPassword) -> bool:
        """Create the row unless present (atomic); True when created."""

    @abstractmethod
    def _load(self, username: Username) -> HashedPassword | None: ...

    @abstractmethod
    def _delete(self, username: Username) -> bool:
        """Delete the row if present (atomic); True when it was there."""

    @abstractmethod
    def _update(self, username: Username, password: HashedPassword) -> bool:
        """Set the password of an existing row only (atomic); True when the row exists."""

    @abstractmethod
    def _replace(self, username: Username, expected: HashedPassword, password: HashedPassword) -> bool:
        """Set the password only while the row still holds ``expected`` (atomic); True when set."""

    @abstractmethod
    def _names(self) -> Iterator[Username]: ...


def _as_username(username: Username | str) -> Username:
    return Username.of(username.value if isinstance(username, Username) else username)


def _check_password(password: str) -> None:
    if not isinstance(password, str) or not password:
        raise InvalidPassword("password must be a non-empty string")
