"""Where the test suite's time goes: the JUnit report of the last ``make test``, summed by area and by file.

    .venv/bin/python bench/suite_time.py [--report .stack/last-test-run.xml] [--files 25] [--depth 3]

``make test`` writes the report (``--junitxml``); each test case's time there is its call plus its
setup and teardown, so a session fixture's start-up counts against the first test that needs it.
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def case_file(classname: str) -> str:
    """``tests.e2e.maintenance.test_x.TestY`` -> ``tests/e2e/maintenance/test_x.py``."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        candidate = Path(*parts[:end]).with_suffix(".py")
        if (REPO / candidate).exists():
            return candidate.as_posix()
    return "/".join(parts) + ".py"


def summarise(report: Path) -> tuple[dict[str, float], int]:
    per_file: dict[str, float] = defaultdict(float)
    cases = 0
    for case in ET.parse(report).getroot().iter("testcase"):   # noqa: S314 (our own pytest's report)
        per_file[case_file(case.get("classname", ""))] += float(case.get("time", 0))
        cases += 1
    return per_file, cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", type=Path, default=REPO / ".stack" / "last-test-run.xml")
    parser.add_argument("--files", type=int, default=25, help="slowest files listed")
    parser.add_argument("--depth", type=int, default=3, help="directory levels that make an area")
    args = parser.parse_args(argv)
    if not args.report.exists():
        print(f"no report at {args.report}: run `make test` first", file=sys.stderr)
        return 2
    per_file, cases = summarise(args.report)
    total = sum(per_file.values())
    per_area: dict[str, float] = defaultdict(float)
    for path, seconds in per_file.items():
        per_area["/".join(Path(path).parent.parts[: args.depth])] += seconds
    print(f"{cases} test cases, {total / 60:.1f} min in all")
    print("\n| area | min | share |\n|---|---:|---:|")
    for area, seconds in sorted(per_area.items(), key=lambda kv: -kv[1]):
        print(f"| `{area}` | {seconds / 60:.1f} | {seconds / total:.0%} |")
    print("\n| slowest files | min |\n|---|---:|")
    for path, seconds in sorted(per_file.items(), key=lambda kv: -kv[1])[: args.files]:
        print(f"| `{path}` | {seconds / 60:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
