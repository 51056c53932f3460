"""The mailbox contract on Cassandra 5 (James's tables) and the S3 server."""

from __future__ import annotations

import pytest

from tests.contract.mailbox_contract import MailboxContract

pytestmark = pytest.mark.integration


class TestCassandraMailbox(MailboxContract):
    @pytest.fixture
    def ctx(self, mailbox_ctx):
        return mailbox_ctx
