"""The README's first mail, run as a newcomer would: its five commands, copied from the README, against
the platform ``make run`` starts (the stack's mail server on its default ports).

The commands are read from the README's bash block, so the README and this test cannot drift apart.
The last one (the IMAP fetch) is tried again for a few seconds, as the README says: delivery to the
INBOX is asynchronous. Run again on the same stack, the domain and user exist already (WebAdmin
answers 409, the commands go on) and UID 1 is still the first mail.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from include.stack.manager import BACKENDS, StackManager

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
SECTION = "## Your first mail in five commands"


def first_mail_commands() -> list[str]:
    """The bash block of the README's first-mail section, one command per entry (continued lines joined)."""
    section = (REPO / "README.md").read_text().split(SECTION, 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "the first-mail section has no bash block"
    commands, current = [], ""
    for line in block.group(1).splitlines():
        current += line + "\n"
        if not line.rstrip().endswith(("\\", "|")):
            commands.append(current)
            current = ""
    return commands


def test_the_readmes_five_commands_bring_the_first_mail_to_an_imap_client():
    manager = StackManager(log=lambda _m: None)
    manager.up((*BACKENDS, "mailserver"))   # idempotent: what `make run` leaves running
    ports = manager.settings.ports
    assert (ports.smtp, ports.imap, ports.webadmin) == (2525, 1143, 8000), "the README's ports are the defaults"
    *setup, fetch = first_mail_commands()
    assert len(setup) == 4, setup

    def bash(script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=REPO, capture_output=True,
                              text=True, timeout=60)

    preamble = "".join(setup)
    sent = bash(preamble)
    assert sent.returncode == 0, sent.stdout + sent.stderr
    deadline = time.monotonic() + 30
    while True:
        # The fetch needs PW only through the preamble's first line; run it alone, as a newcomer retrying it would.
        got = bash(fetch)
        if got.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert got.returncode == 0, got.stdout + got.stderr
    assert "Subject: hello" in got.stdout and "first mail" in got.stdout, got.stdout
    assert "Delivered-To: alice@example.test" in got.stdout and "Return-Path: <bob@example.org>" in got.stdout, \
        got.stdout
