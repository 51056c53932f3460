"""Password hashing at James's own cost in the test session, the production cost only where a test checks it.

This server hashes new passwords with PBKDF2-SHA512 at 210,000 iterations (OWASP's count); James's
default is the same hasher at 1,000. At 210,000 each hash and each login costs about 0.24 s of CPU
on a 2.3 GHz core: 812 of them were 29 % of the unit tests' time. The test session hashes with
``PBKDF2-SHA512-1000``: the same code path and James's cost, under a name of its own so that rows
James writes (``PBKDF2-SHA512/plain``) are still upgraded at login as in production. Tests marked
``production_password_cost`` run with the shipped default, in this process and in the servers they
start.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

import pytest

from mailserver.model.passwords import DEFAULT_ALGORITHM, PasswordHasher

TEST_ALGORITHM = "PBKDF2-SHA512-1000"
SETTING = "MAILSERVER_USERS_PASSWORD_ALGORITHM"   # servers started by tests read it (settings/users.py)

_shipped_init = PasswordHasher.__init__


def _test_init(self: PasswordHasher, algorithm: str = TEST_ALGORITHM) -> None:
    _shipped_init(self, algorithm)


@contextmanager
def _hashing(init: object, algorithm: str) -> Iterator[None]:
    # MonkeyPatch puts back only what it set: variables that fixtures set up inside the block add stay.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(PasswordHasher, "__init__", init)
        patch.setenv(SETTING, algorithm)
        yield


def james_cost() -> AbstractContextManager[None]:
    """A hasher made without an algorithm, and a server configured from the environment, use
    ``TEST_ALGORITHM`` (unless the environment names one already)."""
    return _hashing(_test_init, os.environ.get(SETTING, TEST_ALGORITHM))


def production_cost() -> AbstractContextManager[None]:
    """The shipped default again, inside ``james_cost``."""
    return _hashing(_shipped_init, DEFAULT_ALGORITHM)
