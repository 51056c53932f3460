"""A runner of James's IMAP protocol scripts (MPT): the script language of James's ``mpt/core``,
the set-up of its ``mpt/impl/imap-mailbox`` suites, and the declared differences of this server."""

import pytest

# The conformance module leaves its count here; the conftest prints it at the end of the run.
SUMMARY_KEY = pytest.StashKey[str]()
