"""The declared differences between this server and James (``differences.yaml``) and the line
matcher that honours them: a server line matches a script's line when James's regex matches it
whole, or when a declared difference says why ours differs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

DIFFERENCES_FILE = Path(__file__).with_name("differences.yaml")
_STATUS = re.compile(r"(?P<tag>\S+) (?P<status>OK|NO|BAD|BYE|PREAUTH)(?: (?P<rest>.*))?$")
_ACTUAL_CODE = re.compile(r"\[(?P<code>[^\]]*)\]")


@cache
def java_regex(pattern: str) -> re.Pattern[str]:
    """James's server lines are Java regexes; the constructs its scripts use mean the same in Python."""
    return re.compile(pattern)


def _expected_code(rest: str) -> str | None:
    """The response-code regex at the start of a status line's pattern (``\\[...\\]``), if any."""
    if not rest.startswith("\\["):
        return None
    end = rest.find("\\]")
    return rest[2:end] if end > 0 else None


_FLAG_LIST = re.compile(r"FLAGS \(([^()]*)\)")
# A flag list in James's pattern that is literal text: flags escaped (\\\\Seen) or keywords, nothing else.
_LITERAL_FLAG_LIST = re.compile(r"FLAGS \\\(((?:\\\\\\?\w+|\$?\w+)(?: (?:\\\\\\?\w+|\$?\w+))*)?\\\)")


def _by_name(flag: str) -> str:
    return flag.lstrip("\\")


def _sorted_flags(actual: str) -> str:
    return _FLAG_LIST.sub(lambda m: "FLAGS (" + " ".join(sorted(m[1].split(), key=_by_name)) + ")", actual)


@cache
def _sorted_flags_pattern(pattern: str) -> re.Pattern[str] | None:
    """``pattern`` with each literal flag list sorted as ``_sorted_flags`` sorts ours; None without any."""
    if not _LITERAL_FLAG_LIST.search(pattern):
        return None

    def sort(found: re.Match[str]) -> str:
        flags = sorted((found[1] or "").split(), key=_by_name)
        return "FLAGS \\(" + " ".join(flags) + "\\)"
    return re.compile(_LITERAL_FLAG_LIST.sub(sort, pattern))


@cache
def _unquoted(pattern: str) -> re.Pattern[str]:
    """``pattern`` with every double quote optional: a name may come as an atom or a quoted string."""
    return re.compile(re.sub(r'\\?"', '"?', pattern))


def _fill(template: str, groups: tuple[str, ...]) -> str:
    """``template`` with ``\\1``... replaced by the groups (regex text, kept as is)."""
    return re.sub(r"\\(\d)", lambda ref: groups[int(ref[1]) - 1], template)


@cache
def _replacement(replacements: tuple[tuple[re.Pattern[str], str], ...], pattern: str) -> re.Pattern[str] | None:
    """Our regex for a James pattern that a declared replacement covers (its groups usable as \\1...)."""
    for james, ours in replacements:
        found = james.fullmatch(pattern)
        if found:
            return re.compile(_fill(ours, found.groups(default="")))
    return None


@dataclass(frozen=True)
class Differences:
    status_text_is_cosmetic: bool
    quoting_is_cosmetic: bool
    flag_order_is_cosmetic: bool
    absent_codes: frozenset[str]
    optional_lines: tuple[str, ...]     # James's patterns we need not send
    extra_lines: tuple[re.Pattern[str], ...]   # our lines James does not send
    replacements: tuple[tuple[re.Pattern[str], str], ...]   # James's pattern (matched as text) -> ours
    not_applicable: dict[str, str]      # script -> reason
    known_failures: dict[str, str]      # script -> bug

    def matches(self, pattern: str, actual: str) -> bool:
        if java_regex(pattern).fullmatch(actual):
            return True
        ours = _replacement(self.replacements, pattern)
        if ours is not None and ours.fullmatch(actual):
            return True
        if self.quoting_is_cosmetic and _unquoted(pattern).fullmatch(actual):
            return True
        if self.flag_order_is_cosmetic and _FLAG_LIST.search(actual):
            sorted_pattern = _sorted_flags_pattern(pattern)
            if sorted_pattern is not None and sorted_pattern.fullmatch(_sorted_flags(actual)):
                return True
        return self.status_text_is_cosmetic and self._same_status(pattern, actual)

    def _same_status(self, pattern: str, actual: str) -> bool:
        """Same tag, same status, same response code; the human-readable text may differ (RFC 3501 7.1)."""
        wanted, got = _STATUS.match(pattern), _STATUS.match(actual)
        if not wanted or not got or wanted["status"] != got["status"]:
            return False
        if not java_regex(wanted["tag"]).fullmatch(got["tag"]):
            return False
        code = _expected_code(wanted["rest"] or "")
        if code is None:
            return True
        found = _ACTUAL_CODE.match(got["rest"] or "")
        if found and java_regex(code).fullmatch(found["code"]):
            return True
        # A code we do not offer may be missing, not replaced by another one (PERMANENTFLAGS is no MAILBOXID).
        return found is None and code.split(" ")[0].strip("\\") in self.absent_codes

    def optional(self, pattern: str) -> bool:
        return pattern in self.optional_lines

    def is_extra(self, actual: str) -> bool:
        return any(p.fullmatch(actual) for p in self.extra_lines)


def load(path: Path = DIFFERENCES_FILE) -> Differences:
    data = yaml.safe_load(path.read_text())
    return Differences(
        status_text_is_cosmetic=bool(data["status_text"]["cosmetic"]),
        quoting_is_cosmetic=bool(data["astring_quoting"]["cosmetic"]),
        flag_order_is_cosmetic=bool(data["flag_order"]["cosmetic"]),
        absent_codes=frozenset(entry["code"] for entry in data.get("absent_codes", [])),
        optional_lines=tuple(entry["james"] for entry in data.get("optional_lines", [])),
        extra_lines=tuple(re.compile(entry["ours"]) for entry in data.get("extra_lines", [])),
        replacements=tuple((re.compile(entry["james"]), entry["ours"]) for entry in data.get("replacements", [])),
        not_applicable={name: entry for name, entry in (data.get("not_applicable") or {}).items()},
        known_failures={name: entry for name, entry in (data.get("known_failures") or {}).items()},
    )
