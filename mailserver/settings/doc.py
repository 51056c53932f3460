"""docs/configuration.md, generated from the settings tree: ``python -m mailserver.settings.doc --write``."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo

from mailserver.model.james_units import unit_milliseconds

from . import AREAS
from .base import EnvironmentSettings, extra, variable

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
HEADER = """# Configuration

Generated from `mailserver/settings/` by `python -m mailserver.settings.doc --write`; do not edit
(`tests/unit/test_configuration_doc.py` fails when this file is stale).

Every setting is an environment variable (secrets never go on a command line). A variable that is
unset or blank takes the default. Booleans are `true`/`false` (also `1`/`0`, `yes`/`no`,
`on`/`off`). Durations and sizes are James's: `500ms`, `30s`, `2h`, `1d`, `1w`, `1month`, `1y`;
`512K`, `25M`, `1G` (powers of 1024); a bare number is in the unit the table names. A malformed
value stops the server at start-up with a message naming its variable.
"""


def shown(field: FieldInfo) -> str:
    meta = extra(field)
    if "shown_default" in meta:
        return str(meta["shown_default"])
    value: Any = field.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, timedelta):
        unit = str(meta["kind"]).split("bare number: ", 1)[1].split(")")[0].split(",")[0].split(";")[0]
        amount = value / timedelta(milliseconds=unit_milliseconds(unit))
        return f"{amount:g}"
    if isinstance(value, tuple):
        return ",".join(map(str, value)) or "empty"
    return str(value) if value != "" else "empty"


def table(title: str, area: type[EnvironmentSettings]) -> str:
    about = area.__doc__ or sys.modules[area.__module__].__doc__ or ""
    lines = [f"## {title}", "", about.strip().splitlines()[0], "",
             "| Variable | Default | Type / unit | Meaning |", "|---|---|---|---|"]
    for field in area.model_fields.values():
        cells = (f"`{variable(field)}`", f"`{shown(field)}`", str(extra(field)["kind"]), field.description or "")
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


def markdown() -> str:
    return HEADER + "".join(f"\n{table(title, area)}\n" for title, area in AREAS.items())


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        DOC.write_text(markdown())
    else:
        sys.stdout.write(markdown())
