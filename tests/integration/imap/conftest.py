"""Prints the MPT conformance count at the end of the run."""

from __future__ import annotations

import pytest

from tests.support.mpt import SUMMARY_KEY


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    summary = config.stash.get(SUMMARY_KEY, None)
    if summary:
        terminalreporter.write_line(summary)
