"""``mailserver serve`` (every role, in this process) indexes delivered mail: SMTP in, the spooler stores
it, the ``listeners`` role consumes the event from RabbitMQ and indexes it in OpenSearch through the
write alias; the server's own search port finds it. Vhost, bucket, index and aliases of its own."""

from __future__ import annotations

import smtplib
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from mailserver.model.address import Username
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.mailbox import MailboxPath
from mailserver.runtime.serve import Server
from mailserver.runtime.settings import ServeSettings
from mailserver.search.api import SearchQuery
from mailserver.search.index import alias_indices, make_client, recorded_index
from mailserver.search.listener import GROUP
from tests.support.mailserver_process import IsolatedVhost, mailet_container_for_tests, server_env

pytestmark = pytest.mark.integration


def eventually(probe: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    value = probe()
    while not value and time.monotonic() < deadline:
        time.sleep(0.2)
        value = probe()
    return value


def test_delivered_mail_is_found_through_the_servers_search_and_expunged_mail_is_not(stack, cassandra, cassandra_config,
                                                                                     tmp_path):
    tag = uuid.uuid4().hex[:8]
    container = mailet_container_for_tests(tmp_path / "mailetcontainer.yaml")
    index_name, read_alias, state = f"mailbox_e2e_{tag}", f"mailboxReadAlias_e2e_{tag}", f"search_state_e2e_{tag}"
    with IsolatedVhost(stack, f"e2e-search-{tag}") as vhost:
        env = server_env(stack, vhost.amqp_url, cassandra_config.keyspace, f"mail-search-{tag}", container,
                         OPENSEARCH_INDEX_MAILBOX_NAME=index_name, OPENSEARCH_ALIAS_READ_MAILBOX_NAME=read_alias,
                         OPENSEARCH_ALIAS_WRITE_MAILBOX_NAME=f"mailboxWriteAlias_e2e_{tag}",
                         OPENSEARCH_STATE_INDEX=state, OPENSEARCH_NB_SHARDS="1", OPENSEARCH_NB_REPLICA="0")
        settings = ServeSettings.from_env(env)
        server = Server(settings, env).start()
        client = make_client(settings.search, max_retries=3)
        try:
            backends = server.backends
            assert GROUP in backends.bus.groups
            assert alias_indices(client, read_alias) == [index_name]   # ensured at start, and recorded
            assert recorded_index(client, read_alias=read_alias, state_index=state) == index_name
            domain = f"search-{tag}.test"
            backends.domains.add(domain)
            alice = Username.of(f"alice@{domain}")
            backends.users.add_user(alice, "secret-pw")
            message = (f"From: Ada <ada@sender.example>\r\nTo: {alice.value}\r\nSubject: Analytical engine\r\n"
                       f"Message-ID: <{tag}@sender.example>\r\n\r\nNotes on the bernoulli numbers.\r\n")
            with smtplib.SMTP("127.0.0.1", int(env["MAILSERVER_SMTP_PORT"]), timeout=30) as smtp:
                assert smtp.sendmail("ada@sender.example", [alice.value], message.encode()) == {}

            inbox = MailboxPath.inbox(alice)
            manager = backends.mailbox.manager
            assert eventually(lambda: manager.mailbox_exists(inbox) and manager.get_messages(inbox))
            mailbox_id = manager.get_mailbox(inbox).id
            search = backends.search

            def found(**criteria) -> list[int]:
                return [h.uid for h in search.search(SearchQuery.of(mailbox_id, **criteria))]

            [stored] = manager.get_messages(inbox)
            assert eventually(lambda: found(from_="ada", subject="engine", body="bernoulli")) == [stored.uid]
            manager.set_flags(inbox, Flags.of(SystemFlag.SEEN), FlagsUpdateMode.ADD)
            assert eventually(lambda: found(flags_set={SystemFlag.SEEN})) == [stored.uid]
            manager.set_flags(inbox, Flags.of(SystemFlag.DELETED), FlagsUpdateMode.ADD)
            assert manager.expunge(inbox) == [stored.uid]
            assert eventually(lambda: found(body="bernoulli") == [] and found(from_="ada") == [])
        finally:
            server.stop()
            client.indices.delete(index=f"{index_name},{state}", ignore_unavailable=True)
