"""What matchers and mailets are (James's Mailet API), and the parameters they are built from.

A matcher returns the subset of a mail's recipients it matches and never changes the mail; a
mailet acts on a mail (changes its state, recipients, content, or stores / sends it). Both are
built once at start from the YAML configuration; a bad condition or parameter raises
``ConfigError`` then, so the container refuses to start instead of failing on the first mail.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from mailserver.model.address import MailAddress
from mailserver.model.mail import Mail

if TYPE_CHECKING:
    from mailserver.mailets.context import MailetContext


class ConfigError(ValueError):
    """A mailet container configuration problem, detected at start."""


class Params:
    """A mailet's init parameters: strings, as James reads them from XML child elements.

    Only the names a mailet declares are accepted, so a misspelt parameter fails the start
    instead of being silently ignored.
    """

    def __init__(self, mailet: str, values: Mapping[str, object], allowed: frozenset[str] | None) -> None:
        self.mailet = mailet
        self.values = {str(k): _as_text(v) for k, v in values.items()}
        if allowed is not None:
            unknown = sorted(set(self.values) - allowed)
            if unknown:
                raise ConfigError(f"{mailet}: unknown parameter(s) {', '.join(unknown)} "
                                  f"(known: {', '.join(sorted(allowed)) or 'none'})")

    def get(self, name: str, default: str | None = None) -> str | None:
        value = self.values.get(name)
        return default if value is None or value == "" else value

    def required(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise ConfigError(f"{self.mailet}: parameter {name!r} is required")
        return value

    def boolean(self, name: str, default: bool) -> bool:
        value = self.get(name)
        if value is None:
            return default
        lowered = value.strip().lower()
        if lowered in ("true", "yes", "1"):
            return True
        if lowered in ("false", "no", "0"):
            return False
        raise ConfigError(f"{self.mailet}: parameter {name!r} must be true or false, not {value!r}")

    def integer(self, name: str, default: int, minimum: int | None = None) -> int:
        value = self.get(name)
        if value is None:
            return default
        try:
            number = int(value)
        except ValueError:
            raise ConfigError(f"{self.mailet}: parameter {name!r} must be an integer, not {value!r}") from None
        if minimum is not None and number < minimum:
            raise ConfigError(f"{self.mailet}: parameter {name!r} must be at least {minimum}, not {number}")
        return number


def _as_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ", ".join(_as_text(v) for v in value)
    return "" if value is None else str(value)


class Matcher(ABC):
    """Built from the text after ``=`` in ``match: Name=condition`` (None when absent)."""

    name: ClassVar[str]
    condition_required: ClassVar[bool] = False

    def __init__(self, condition: str | None, context: MailetContext) -> None:
        if self.condition_required and not (condition and condition.strip()):
            raise ConfigError(f"matcher {self.name} needs a condition ({self.name}=...)")
        self.condition = condition.strip() if condition else None
        self.context = context

    @abstractmethod
    def match(self, mail: Mail) -> list[MailAddress]:
        """The matched recipients, a subset of ``mail.recipients`` (in their order)."""

    def __str__(self) -> str:
        return f"{self.name}={self.condition}" if self.condition else self.name


class Mailet(ABC):
    """Built from ``params``; ``PARAMS`` lists the accepted names (None: any)."""

    name: ClassVar[str]
    PARAMS: ClassVar[frozenset[str] | None] = frozenset()

    def __init__(self, params: Params, context: MailetContext) -> None:
        self.params = params
        self.context = context

    @abstractmethod
    def service(self, mail: Mail) -> None: ...

    def referenced_processors(self) -> list[str]:
        """Processor names this mailet may send mails to (checked to exist at start)."""
        return []

    def __str__(self) -> str:
        return self.name
