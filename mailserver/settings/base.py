"""The reading of the environment: one pydantic-settings model per area, fed from a given mapping.

Every area is an ``EnvironmentSettings`` whose fields are named by their variable (the alias) and
documented (``setting``); ``from_env(env)`` reads ``env`` only, or ``os.environ`` when it is None.
A value made of spaces is no value (the variable is unset), as it always was here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Self

from pydantic import Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict


class SettingsError(ValueError):
    """A setting is malformed: the server refuses to start and names the variable."""


def setting(variable: str, default: Any, description: str, kind: str, *, secret: bool = False,
            verbatim: bool = False, shown_default: str | None = None) -> Any:
    """A field read from ``variable``. ``kind`` is the type and unit the documentation shows;
    ``verbatim`` keeps the value's surrounding spaces (secrets); ``shown_default`` documents a
    default computed at start-up (the host name, the SMTP value ...)."""
    extra: dict[str, Any] = {"kind": kind, "verbatim": verbatim}
    if shown_default is not None:
        extra["shown_default"] = shown_default
    return Field(default, alias=variable, description=description, repr=not secret, json_schema_extra=extra)


def variable(field: FieldInfo) -> str:
    assert field.alias is not None, "every setting is named by its variable"
    return field.alias


def extra(field: FieldInfo) -> dict[str, Any]:
    return field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}


class MappingSource(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping instead of ``os.environ``."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        self._env = env
        super().__init__(settings_cls, case_sensitive=True)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        values: dict[str, str | None] = {}
        for field in self.settings_cls.model_fields.values():
            name = variable(field)
            raw = self._env.get(name)
            if raw is None or not raw.strip():
                continue
            values[name] = raw if extra(field).get("verbatim") else raw.strip()
        return values


class EnvironmentSettings(BaseSettings):
    """One area's variables. Built only through ``from_env``: the sources below are the mapping's."""

    # enable_decoding=False: a comma list is text for our validators, not JSON for pydantic-settings.
    model_config = SettingsConfigDict(frozen=True, extra="ignore", case_sensitive=True, enable_decoding=False)

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        # from_env hands the mapping's values in: no other source may add os.environ or a .env file.
        return (init_settings,)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Self:
        """The area's settings from ``env`` (``os.environ`` when None); SettingsError naming the variable."""
        values = MappingSource(cls, os.environ if env is None else env)()
        try:
            return cls(**values)
        except ValidationError as exc:
            raise SettingsError(describe(exc)) from None


def describe(exc: ValidationError) -> str:
    """The first error, as ``VARIABLE: what is wrong``."""
    error = exc.errors()[0]
    name = ".".join(str(part) for part in error["loc"])
    if error["type"] == "value_error":   # our parsers' words, which quote the value already
        return f"{name}: {str(error['msg']).removeprefix('Value error, ')}"
    return f"{name}: {error['msg']} (got {error.get('input')!r})"
