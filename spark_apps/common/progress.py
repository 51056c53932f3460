"""What a person reads in a job's log: progress lines while it repairs, a summary block at the end.

Progress: one line per slice (slices done, items handled, items/s, an ETA from the pace so far).
Summary: a few lines after the ``REPORT`` line (which is the whole report on one line, for
machines): the outcome, counts detected / fixed / failed / unresolved, and where the report is.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

SUMMARY_RULE = "=" * 60


class Progress:
    def __init__(self, slices: int, items: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.slices, self.items = slices, items
        self.done_slices = self.done_items = 0
        self._clock = clock
        self._started = clock()

    def slice_done(self, items: int) -> str:
        """Count one finished slice of ``items`` items; the progress line to log."""
        self.done_slices += 1
        self.done_items += items
        elapsed = max(self._clock() - self._started, 1e-9)
        rate = self.done_items / elapsed
        left = self.slices - self.done_slices
        eta = elapsed / self.done_slices * left
        return (f"progress: {self.done_slices}/{self.slices} slices, {self.done_items}/{self.items} items, "
                f"{rate:.1f} items/s, ETA {format_seconds(eta) if left else 'done'}")


def format_seconds(seconds: float) -> str:
    hours, rest = divmod(round(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def summary_block(report: Mapping[str, Any], report_uri: str) -> str:
    """The end of a job's log: what a person needs without opening the report."""
    detected = report.get("detected") or {}
    fixed = report.get("fixedInconsistencies")
    lines = [SUMMARY_RULE,
             f"SUMMARY {report.get('type')}: {report.get('outcome')}"
             + (" (dry run: nothing was written)" if report.get("dryRun") else ""),
             f"  detected:   {sum(detected.values())} {dict(detected) if detected else ''}".rstrip()]
    if not report.get("dryRun"):
        # The report lists the fixed items up to --sample-size: the count shown is the listed ones.
        lines += [f"  fixed:      {len(fixed) if isinstance(fixed, list) else fixed or 0} (listed in the report)",
                  f"  failed:     {len(report.get('errors') or [])}",
                  f"  unresolved: {report.get('unresolved', 0)}",
                  f"  new since detection: {report.get('newSinceDetection', 0)}"]
    if "durationSeconds" in report:
        lines.append(f"  duration:   {format_seconds(float(report['durationSeconds']))}")
    lines += [f"  full report: {report_uri}", SUMMARY_RULE]
    return "\n".join(lines)
