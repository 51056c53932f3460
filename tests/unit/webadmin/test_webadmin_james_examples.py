"""A replay of James's WebAdmin documentation examples against our WebAdmin (one app, memory adapters).

The examples are the checked-in table ``james_webadmin_examples.json`` (its header names James's commit
and files; ``james_webadmin_examples_gen.py`` wrote it). They run in the documentation's order, so a
section's creations precede its reads, on a server holding the entities the doc's names refer to
(``DOC_NAMES``). Each answer must carry a status code the doc lists for its section and, for a
success the doc shows a response of, that response's shape: every key the doc shows, at every depth,
with the kind of value it shows. Where we answer otherwise, ``DIFFERENCES`` says why (and
docs/compatibility.md, WebAdmin routes); a difference fixed must leave the list.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # starlette's httpx deprecation notice
    from fastapi.testclient import TestClient

from mailserver.airflow.memory import MemoryDagRuns
from mailserver.blob.memory import MemoryBlobStore
from mailserver.dlp.store import DlpConfigurationStore
from mailserver.droplist.memory import MemoryDropList
from mailserver.events.in_process import InProcessEventBus
from mailserver.eventsourcing.memory import MemoryEventStore
from mailserver.identities.memory import MemoryCustomIdentityStore
from mailserver.identities.repository import IdentityRepository
from mailserver.jmap.uploads import MemoryUploadRepository
from mailserver.mailbox.subscriptions import MemorySubscriptionStore
from mailserver.mailbox.wiring import memory_context
from mailserver.model.address import MailAddress
from mailserver.model.mailbox import MailboxPath
from mailserver.queue.memory import MemoryMailQueueFactory
from mailserver.repository.memory import MemoryMailRepositoryStore
from mailserver.rrt.can_send_from import CanSendFrom
from mailserver.serving.connections import ConnectionRegistry
from mailserver.sieve.quota import MemorySieveQuotas
from mailserver.tasks.builtin.migration import SchemaVersions
from mailserver.tasks.builtin.vault import VaultParts
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.memory import MemoryTaskStore
from mailserver.users.delegation import MemoryDelegationStore
from mailserver.users.memory import MemoryUsersRepository
from mailserver.vacation.memory import MemoryVacationRepository
from mailserver.vault.config import VaultConfiguration
from mailserver.vault.memory import memory_vault
from mailserver.webadmin.app import create_app
from tests.support.schema_version_session import FakeSchemaSession
from tests.unit.mailets.support import FastHasher
from tests.unit.webadmin.webadmin_support import FULL, make_context

TABLE = json.loads(Path(__file__).with_name("james_webadmin_examples.json").read_text())
EXAMPLES: list[dict[str, Any]] = TABLE["examples"]
REQUIRED_SUCCEEDED, REQUIRED_SHAPES = 177, 40   # what the replay reaches now: a loss fails

# The doc's placeholders and example names -> what this server holds (virtual hosting: users are addresses).
DOC_NAMES = {
    "{backend-name}": "Cassandra", "{domainToBeDeleted}": "deleted.tld", "{domainName}": "domain.tld",
    "{domainToBeUsed}": "domain.tld", "domainToBeCreated": "created.tld", "{userToBeDeleted}": "gone@domain.tld",
    "usernameToBeUsed": "bob@domain.tld", "{usernameToBeUsed}": "bob@domain.tld", "givenUser": "bob@domain.tld",
    "baseUser": "bob@domain.tld", "{baseUser}": "bob@domain.tld", "delegatedUser": "alice@domain.tld",
    "oldUser": "old@domain.tld", "newUser": "new@domain.tld", "{username}": "bob@domain.tld",
    "{mailboxNameToBeCreated}": "Archive", "{mailboxNameToBeDeleted}": "Archive", "{mailboxNameToBeTested}": "INBOX",
    "{mailboxName}": "INBOX", "{encodedPathOfTheRepository}": "var%2Fmail%2Ferror%2F", "{mailQueueName}": "spool",
    "{senderDomain}": "domain.tld", "{userAddress}": "bob@domain.tld", "{mappingSource}": "source@domain.tld",
    "{destinationAddress}": "bob@domain.tld", "{someProtocol}": "memory", "{type}": "Alias",
}
DOMAINS = ("domain.tld", "deleted.tld", "destination.domain.tld", "source.domain.tld", "james.org", "domain.com",
           "domain.ext", "target.com")
USERS = ("bob@domain.tld", "alice@domain.tld", "gone@domain.tld", "old@domain.tld", "user@domain.com",
         "user@domain.ext", "userToRestore@domain.ext", "userExportFrom@domain.ext", "target@target.com")

# Answers whose keys are names (mapping sources, domains), not fields.
DATA_KEYED = {"GET /domainMappings", "GET /mappings"}

# "METHOD target" -> why we answer otherwise than the doc (reviewed; also in docs/compatibility.md).
NOT_SERVED = "one of the documented endpoints not served (docs/compatibility.md, WebAdmin routes)"
DIFFERENCES: dict[str, str] = {
    "GET /healthcheck?check=HealthCheck1&check=HealthCheck%20two":
        "the doc's check names are examples: unknown names answer 404, as James's code does (undocumented)",
    "POST /users/{usernameToBeUsed}/mailboxes?task=export": NOT_SERVED,
    "POST /cassandra/mailbox/merging": NOT_SERVED,
    "PUT /mailRepositories/mailRepo?protocol=file": "no file-backed mail repositories: memory and cassandra only",
    "POST /cassandra/version/upgrade": "a task is created: 201, as James's code answers (its doc says 200)",
    "POST /cassandra/version/upgrade/latest": "a task is created: 201, as James's code answers (its doc says 200)",
}


def concrete(target: str) -> str:
    for name, value in sorted(DOC_NAMES.items(), key=lambda item: -len(item[0])):   # {name} before name
        target = target.replace(name, value)
    return re.sub(r"\[[&?]force=true\]", "", target)


def key(example: dict[str, Any]) -> str:
    return f"{example['method']} {example['target']}"


def shape_differences(ours: Any, doc: Any, where: str = "") -> list[str]:
    """Where our JSON lacks a key the doc shows, or holds another kind of value (null is an absent value,
    which James writes as null too: its WebAdmin JSON keeps empty Optionals)."""
    if ours is None:
        return []
    if isinstance(doc, dict):
        if not isinstance(ours, dict):
            return [f"{where}: {type(ours).__name__}, the doc shows an object"]
        return [d for k, v in doc.items() for d in
                ([f"{where}.{k}: missing"] if k not in ours else shape_differences(ours[k], v, f"{where}.{k}"))]
    if isinstance(doc, list):
        if not isinstance(ours, list):
            return [f"{where}: {type(ours).__name__}, the doc shows a list"]
        return shape_differences(ours[0], doc[0], f"{where}[0]") if ours and doc else []
    kinds = {"string": str, "number": (int, float), "boolean": bool}
    if doc in kinds and ours is not None and not isinstance(ours, kinds[doc]):
        return [f"{where}: {ours!r}, the doc shows a {doc}"]
    return []


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    bus = InProcessEventBus(retries=0)
    mailbox = memory_context(MemoryBlobStore(), bus)
    migrations = dict.fromkeys((13, 14))   # never run: an upgrade is only planned
    queues, subscriptions = MemoryMailQueueFactory(), MemorySubscriptionStore()
    vault = VaultParts(memory_vault(), mailbox.manager, VaultConfiguration(enabled=True), queues,
                       MailAddress.of("postmaster@domain.tld"), subscriptions)
    ctx = make_context(queues=queues, repositories=MemoryMailRepositoryStore(),
                       tasks=TaskManager(MemoryTaskStore(), "replay"), mailboxes=mailbox.manager,
                       subscriptions=subscriptions, vault=vault, dead_letters=bus.dead_letters, bus=bus,
                       schema_versions=SchemaVersions(FakeSchemaSession(12), migrations, 14),  # type: ignore[arg-type]
                       dag_runs=MemoryDagRuns(base_url="http://airflow.test"), droplist=MemoryDropList(),
                       sieve_quotas=MemorySieveQuotas(), connections=ConnectionRegistry(),
                       vacations=MemoryVacationRepository(), dlp=DlpConfigurationStore(MemoryEventStore()),
                       uploads=MemoryUploadRepository(MemoryBlobStore()))
    ctx.users = MemoryUsersRepository(ctx.domains, hasher=FastHasher())
    ctx.delegation = MemoryDelegationStore(ctx.users.contains)
    ctx.identities = IdentityRepository(MemoryCustomIdentityStore(), CanSendFrom(ctx.rrt).addresses)
    for domain in DOMAINS:
        ctx.domains.add(domain)
    for user in USERS:
        ctx.users.add_user(user, "passwordToBeUsed")
        mailbox.manager.create_mailbox(MailboxPath.inbox(user))
    queues.get("spool")
    ctx.repositories.select("memory://var/mail/error/")
    with TestClient(create_app(ctx), headers={"Password": FULL}, raise_server_exceptions=False) as test_client:
        yield test_client


@dataclass(frozen=True)
class Replayed:
    example: str            # "METHOD target", as the doc writes it
    status: int
    shape_compared: bool
    problems: tuple[str, ...]


def replay(client: TestClient, example: dict[str, Any]) -> Replayed | None:
    """The example's request and how its answer differs from the doc; None when it cannot be sent."""
    target = concrete(example["target"])
    if "{" in target or target.startswith("/endpoint"):
        return None   # a placeholder no entity here stands for (a message id, an action list)
    body = example["body"]
    response = client.request(example["method"], target, content=body,
                              headers={"Content-Type": "application/json"} if body else {})
    problems, compared = [], False
    if example["codes"] and response.status_code not in example["codes"]:
        problems.append(f"status {response.status_code}, the doc lists {example['codes']}: {response.text[:200]}")
    elif example["response"] is not None and 200 <= response.status_code < 300 and response.content:
        ours, doc, compared = response.json(), example["response"], True
        if key(example) in DATA_KEYED:   # keyed by names (sources, domains): compare one entry's shape
            ours, doc = list(ours.values())[:1], list(doc.values())[:1]
        problems += shape_differences(ours, doc)
    return Replayed(key(example), response.status_code, compared, tuple(problems))


@pytest.fixture(scope="module")
def replayed(client) -> list[Replayed]:
    """Every example, in the doc's order (a section's creations come before its reads)."""
    return [r for example in EXAMPLES if (r := replay(client, example)) is not None]


def test_the_table_names_its_source():
    assert re.fullmatch(r"[0-9a-f]{40}", TABLE["source"]["commit"])
    assert len(EXAMPLES) > 200 and all(e["method"] in {"GET", "HEAD", "PUT", "POST", "PATCH", "DELETE"}
                                       for e in EXAMPLES)


def test_every_example_answers_as_james_documents(replayed):
    differing = {r.example: r.problems for r in replayed if r.problems and r.example not in DIFFERENCES}
    assert differing == {}, "\n".join(f"{k}: {'; '.join(v)}" for k, v in differing.items())


def test_every_declared_difference_still_differs(replayed):
    differing = {r.example for r in replayed if r.problems}
    assert [k for k in DIFFERENCES if k not in differing] == []


def test_most_examples_succeed_and_show_the_documented_shape(replayed):
    """A ratchet: an example that stops succeeding (or stops being compared) fails here."""
    succeeded = [r for r in replayed if 200 <= r.status < 300]
    compared = [r for r in replayed if r.shape_compared and not r.problems]
    print(f"\nJames WebAdmin examples: {len(replayed)} replayed, {len(succeeded)} succeeded, "
          f"{len(compared)} with the documented response shape")
    assert len(succeeded) >= REQUIRED_SUCCEEDED, [r.example for r in replayed if r not in succeeded]
    assert len(compared) >= REQUIRED_SHAPES


def test_the_shape_comparison_finds_a_missing_key_and_a_wrong_kind():
    assert shape_differences({"a": 1}, {"a": "number", "b": "string"}) == [".b: missing"]
    assert shape_differences([{"a": "x"}], [{"a": "number"}]) == ["[0].a: 'x', the doc shows a number"]


def test_the_compatibility_notes_give_the_tested_counts():
    notes = (Path(__file__).parents[3] / "docs" / "compatibility.md").read_text()
    assert f"{REQUIRED_SUCCEEDED} succeed" in notes and f"{REQUIRED_SHAPES} answers are compared" in notes
    assert all(reason.strip() for reason in DIFFERENCES.values())
