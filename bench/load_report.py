"""What the protocol load benchmarks (``bench/imap.py``, ``bench/jmap.py``) print of a run besides
their table: the latency percentile, and per load the server's CPU per operation, the machine's
load average around the run and the first distinct errors."""

from __future__ import annotations

import argparse
import math
import re
import timeit
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank ``p``-th percentile of ``values`` (not empty)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def cost_lines(run: Mapping[str, Any], clients: str, operations: str, operation: str, server: str = "") -> list[str]:
    """``- <clients>: <n> <operations> in <s> s; server process CPU <ms> per <operation>...`` and up to
    five distinct errors with their counts. ``run`` holds ``samples``, ``duration``, ``server_cpu``
    (seconds), ``load`` (before, after) and ``errors``; ``server`` names what the CPU covers."""
    cpu = run["server_cpu"] / max(1, len(run["samples"])) * 1000
    covers = f" ({server})" if server else ""
    lines = [f"- {clients}: {len(run['samples'])} {operations} in {run['duration']:g} s; server process CPU "
             f"{cpu:.1f} ms per {operation}{covers}; load average {run['load'][0]:.1f} before, "
             f"{run['load'][1]:.1f} after"]
    for error in sorted(set(run["errors"]))[:5]:
        lines.append(f"  - error: `{error[:160]}` (x{run['errors'].count(error)})")
    return lines


def load_parser(doc: str | None, clients: str, duration: float) -> argparse.ArgumentParser:
    """The options every load bench takes: ``-c/--<clients>`` (comma-separated loads), ``--duration``,
    ``--client-processes`` and ``--record``; each bench adds its own."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-c", f"--{clients}", default="10,100", help=f"concurrent {clients}, comma-separated")
    parser.add_argument("--duration", type=float, default=duration, help="measured seconds per load")
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument("--record", action="store_true", help="append the result to docs/benchmarks.md")
    return parser


def host_speed() -> str:
    """The processor and one fixed piece of pure-Python work timed on it, for the section's heading.

    Hosts differ: the same commit measured 0.5-0.7 ms of protocol CPU a command on one build machine
    and 1.5 ms on another (2026-11-28). A figure read against another host's must be read with this.
    """
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    except OSError:
        cpuinfo = ""
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    mhz = re.search(r"^cpu MHz\s*:\s*([\d.]+)$", cpuinfo, re.M)
    seconds = min(timeit.repeat("sum(range(1_000_000))", number=5, repeat=5)) / 5
    processor = model.group(1).strip() if model else "processor unknown"
    if mhz:
        processor += f" at {float(mhz.group(1)):.0f} MHz"
    return f"{processor}; sum(range(10**6)) in {seconds * 1000:.1f} ms"
