"""The MPT script language, as James's ``FileProtocolSessionBuilder`` reads it.

``C: line`` is sent by the client, ``S: regex`` must match the next server line as a whole (a Java
regex), ``SUB {`` ... ``}`` holds ``S:`` lines that may come in any order, ``S: \\+ Ok`` (exactly)
waits for a continuation request, ``SESSION: n`` makes the following lines address session n
(before any: every session), ``#`` and blank lines are comments. ``REINIT`` reconnects the session;
``WAIT ms``, ``AWAIT``, ``LOG`` and ``TIMER`` serve James's own timing and logs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ALL_SESSIONS = -1
_CONTINUATION = "S: \\+ Ok"


@dataclass(frozen=True)
class Element:
    session: int          # ALL_SESSIONS or a session number
    location: str         # script:line, for failure messages


@dataclass(frozen=True)
class Client(Element):
    line: str


@dataclass(frozen=True)
class Server(Element):
    pattern: str


@dataclass(frozen=True)
class Unordered(Element):
    patterns: tuple[str, ...]


@dataclass(frozen=True)
class Continuation(Element):
    pass


@dataclass(frozen=True)
class Reinit(Element):
    pass


@dataclass(frozen=True)
class Wait(Element):
    millis: int


@dataclass(frozen=True)
class Script:
    name: str
    elements: list[Element] = field(default_factory=list)

    @property
    def session_count(self) -> int:
        return max([e.session for e in self.elements] + [0]) + 1


class ScriptError(ValueError):
    pass


def parse(name: str, text: str) -> Script:
    script = Script(name)
    session = ALL_SESSIONS
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        where = f"{name}:{index + 1}"
        index += 1
        if line == _CONTINUATION:
            script.elements.append(Continuation(session, where))
        elif line.startswith("C:"):
            script.elements.append(Client(session, where, line[3:]))
        elif line.startswith("S:"):
            script.elements.append(Server(session, where, line[3:]))
        elif line.startswith("SUB {"):
            patterns = []
            while index < len(lines) and not lines[index].startswith("}"):
                if not lines[index].startswith("S:"):
                    raise ScriptError(f"{name}:{index + 1}: only S: lines may stand in a SUB block")
                patterns.append(lines[index][3:])
                index += 1
            if index == len(lines):
                raise ScriptError(f"{where}: SUB block not closed")
            index += 1
            script.elements.append(Unordered(session, where, tuple(patterns)))
        elif line.startswith("#") or not line.strip():
            continue
        elif line.startswith("SESSION:"):
            session = int(line[len("SESSION:"):].strip())
        elif line.startswith("WAIT"):
            script.elements.append(Wait(session, where, int(line[5:])))
        elif line.startswith("REINIT"):
            script.elements.append(Reinit(session, where))
        elif line.startswith(("AWAIT", "LOG", "TIMER")):
            continue   # James's in-process host uses them to pace and log; over TCP each read waits anyway
        else:
            raise ScriptError(f"{where}: invalid line prefix {line[:3]!r}")
    return script


def prefixed(script: Script, elements: list[Element]) -> Script:
    """``script`` with ``elements`` run before it (James's pre-elements)."""
    return Script(script.name, [*elements, *script.elements])
