"""Names usable in ``mailetcontainer.yaml``: the matcher and mailet classes, by James's simple name.

The built-in classes are listed here (``BUILTIN_MAILETS``) and in ``matchers.BUILTIN_MATCHERS``;
those two tables are the single source, and pyproject.toml declares the same classes as entry
points (a unit test keeps them equal). Any installed distribution adds its own by declaring entry
points in the groups ``mailserver.mailets`` and ``mailserver.matchers``, named by the class's
``name``. The built-ins come from the tables, so they are found even when the installed metadata
is older than pyproject.toml; an entry point may not give a built-in name to another class.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, TypeVar

from mailserver.mailets.api import ConfigError, Mailet, Matcher
from mailserver.mailets.bounce import Bounce, DSNBounce
from mailserver.mailets.delivery import LocalDelivery
from mailserver.mailets.headers import AddDeliveredToHeader, AddHeader, RemoveHeader, RemoveMimeHeader, SetMimeHeader
from mailserver.mailets.mailets import (
    LogMessage,
    MetricsMailet,
    Null,
    RemoveMailAttribute,
    SetErrorMessage,
    SetMailAttribute,
    ToProcessor,
    ToRepository,
)
from mailserver.mailets.matchers import BUILTIN_MATCHERS
from mailserver.mailets.remote import RemoteDelivery
from mailserver.mailets.rewrite import PostmasterAlias, RecipientRewriteTable

MAILET_GROUP = "mailserver.mailets"
MATCHER_GROUP = "mailserver.matchers"

BUILTIN_MAILETS: dict[str, type[Mailet]] = {cls.name: cls for cls in (
    ToProcessor, ToRepository, Null, SetMailAttribute, RemoveMailAttribute, SetErrorMessage, LogMessage,
    MetricsMailet, SetMimeHeader, AddHeader, RemoveMimeHeader, RemoveHeader, AddDeliveredToHeader,
    RecipientRewriteTable, PostmasterAlias, LocalDelivery, RemoteDelivery, Bounce, DSNBounce)}

T = TypeVar("T", Mailet, Matcher)


def entry_point_value(cls: type) -> str:
    """``module:Class``, as an entry point names a class."""
    return f"{cls.__module__}:{cls.__qualname__}"


def _origin(entry: EntryPoint) -> str:
    distribution = entry.dist.name if entry.dist else "an unknown distribution"
    return f"entry point {entry.name} = {entry.value!r} of {distribution}"


# ``kind`` is an abstract class, which mypy accepts only where ``type[Any]`` is expected.
def discover(group: str, builtins: Mapping[str, type[T]], kind: type[Any]) -> dict[str, type[T]]:
    """The built-ins plus the classes the installed distributions declare in ``group``.

    ConfigError when an entry point does not name a ``kind`` whose ``name`` is the entry point's,
    gives a built-in's name to another class, or shares its name with another distribution's.
    """
    found = dict(builtins)
    origins: dict[str, str] = {}
    for entry in entry_points(group=group):
        builtin = builtins.get(entry.name)
        if builtin is not None:
            if entry.value.replace(" ", "") != entry_point_value(builtin):
                raise ConfigError(f"{_origin(entry)} would replace the built-in {entry_point_value(builtin)}")
            continue
        if entry.name in origins:
            raise ConfigError(f"{_origin(entry)} and {origins[entry.name]} share one name")
        cls = entry.load()
        if not (isinstance(cls, type) and issubclass(cls, kind)):
            raise ConfigError(f"{_origin(entry)} is not a {kind.__name__} class")
        name = getattr(cls, "name", None)
        if name != entry.name:
            raise ConfigError(f"{_origin(entry)} names a class whose name is {name!r}")
        found[entry.name], origins[entry.name] = cls, _origin(entry)
    return found


MAILETS: dict[str, type[Mailet]] = discover(MAILET_GROUP, BUILTIN_MAILETS, Mailet)
MATCHERS: dict[str, type[Matcher]] = discover(MATCHER_GROUP, BUILTIN_MATCHERS, Matcher)


def matcher_class(name: str) -> type[Matcher] | None:
    return MATCHERS.get(name)


def mailet_class(name: str) -> type[Mailet] | None:
    return MAILETS.get(name)
