"""The ``DomainList`` port: which domains this server delivers for (James's DomainList).

Domains go through ``Domain.of`` on every call, so ``Example.COM.`` and ``example.com`` are the
same domain everywhere (lower-cased, trailing dot dropped, IDNA-encoded, labels checked).

Removing a domain that still has users or mappings is allowed, as in James: the users and the
recipient rewrite table are left as they are (they simply stop being reachable as local
addresses). Deleting a domain's data is a separate, explicit operation (James's
``POST /domains/{d}?action=deleteData``), never a side effect of removal.

Adapters only implement the four storage primitives; the rules (normalisation, errors) are
written once here so the memory and Cassandra adapters cannot drift apart.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable

from mailserver.model.address import Domain


class DomainListError(Exception):
    pass


class DomainAlreadyExists(DomainListError):
    def __init__(self, domain: Domain) -> None:
        super().__init__(f"domain {domain} already exists")
        self.domain = domain


class DomainNotFound(DomainListError):
    def __init__(self, domain: Domain) -> None:
        super().__init__(f"domain {domain} is not a local domain (not in the domain list)")
        self.domain = domain


def as_domain(domain: Domain | str) -> Domain:
    """Validate and normalise; raises ``InvalidAddress`` for a malformed name."""
    return Domain.of(domain.name if isinstance(domain, Domain) else domain)


class DomainList(ABC):
    def add(self, domain: Domain | str) -> Domain:
        """Register a local domain; raises DomainAlreadyExists. Returns the normalised domain."""
        d = as_domain(domain)
        if not self._insert(d):
            raise DomainAlreadyExists(d)
        return d

    def remove(self, domain: Domain | str) -> None:
        """Unregister a domain; raises DomainNotFound. Its users and mappings are kept (James)."""
        d = as_domain(domain)
        if not self._delete(d):
            raise DomainNotFound(d)

    def contains(self, domain: Domain | str) -> bool:
        return self._exists(as_domain(domain))

    def list(self) -> list[Domain]:
        """All local domains, sorted by name."""
        return sorted(self._all())

    # -- storage primitives -------------------------------------------------------------------
    @abstractmethod
    def _insert(self, domain: Domain) -> bool:
        """Store the domain unless present; True when it was added (atomic)."""

    @abstractmethod
    def _delete(self, domain: Domain) -> bool:
        """Remove the domain if present; True when it was there (atomic)."""

    @abstractmethod
    def _exists(self, domain: Domain) -> bool: ...

    @abstractmethod
    def _all(self) -> Iterable[Domain]: ...
