"""How passwords are hashed: James's ``usersrepository.xml`` ``algorithm``."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from mailserver.model.passwords import DEFAULT_ALGORITHM, Algorithm

from .base import EnvironmentSettings, setting


def _james_algorithm(value: str) -> str:
    Algorithm.of(value)   # raises ValueError for a name James could not read either
    return value


class UsersSettings(EnvironmentSettings):
    password_algorithm: Annotated[str, AfterValidator(_james_algorithm)] = setting(
        "MAILSERVER_USERS_PASSWORD_ALGORITHM", DEFAULT_ALGORITHM, "Hash of new passwords, as James names it "
        "(`algorithm` of usersrepository.xml; `PBKDF2-SHA512` is James's default, 1000 iterations). Other "
        "rows are rewritten with it at the next login.", "James algorithm[/mode]")
