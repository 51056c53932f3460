"""The reindex's partition pipeline on fake S3 and OpenSearch clients: outcomes, bounded overlap of the
fetches, and ``_bulk`` requests outstanding while the next batch is fetched."""

from __future__ import annotations

import io
import itertools
import json
import threading
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from opensearchpy.serializer import JSONSerializer

from spark_apps.common.reindex_pipeline import from_micros, merged_row, reindex_partition
from spark_apps.common.search_reindex import build_document

COUNTERS = {"missingDocument": "indexedMessageCount", "outdatedDocument": "fixedMessageCount",
            "orphanDocument": "deletedDocumentCount"}
HEADER = b"From: a@example.com\r\nSubject: hello\r\nDate: Tue, 24 Nov 2026 10:00:00 +0000\r\n\r\n"
BODY = b"the body\r\n"
WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
DEADLINE = 10.0


class FakeS3:
    """``DirectS3.get_object`` of a header or body blob; ``on_get`` sees each key as it is requested."""

    def __init__(self, on_get: Any = None) -> None:
        self.on_get = on_get

    def get_object(self, bucket: str, key: str) -> io.BytesIO:
        if self.on_get is not None:
            self.on_get(key)
        return io.BytesIO(HEADER if key.startswith("h-") else BODY)


@dataclass
class FakeSearch:
    """The OpenSearch calls of a reindex write: the write alias's indices and ``_bulk``."""

    refuse: set[str] = field(default_factory=set)        # document ids answered with an error
    on_bulk: Any = None
    sent: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.transport = type("Transport", (), {"serializer": JSONSerializer()})()
        self.indices = type("Indices", (), {"get_alias": lambda _self, name: {"index-a": {}}})()

    def bulk(self, body: str, **_: Any) -> dict[str, Any]:
        if self.on_bulk is not None:
            self.on_bulk()
        lines = [json.loads(line) for line in body.splitlines() if line]
        items, i = [], 0
        while i < len(lines):
            op, meta = next(iter(lines[i].items()))
            if op == "index":
                self.sent.append(lines[i + 1])
                i += 2
            else:
                i += 1
            status = 400 if meta["_id"] in self.refuse else 200
            result = {"_id": meta["_id"], "_index": meta["_index"], "status": status}
            if status == 400:
                result["error"] = {"type": "mapper_parsing_exception", "reason": "refused"}
            items.append({op: result})
        return {"errors": any("error" in next(iter(i.values())) for i in items), "items": items}


@dataclass(frozen=True)
class Access:
    reader_: Any

    def reader(self) -> Any:
        return self.reader_


@dataclass
class FakeProcedure:
    s3: Access
    search: Any
    bucket: str = "mail"


@dataclass(frozen=True)
class SearchAccessLike:
    fake: FakeSearch
    write_alias: str = "write"

    def client(self) -> FakeSearch:
        return self.fake


def procedure(s3: FakeS3, search: FakeSearch) -> FakeProcedure:
    return FakeProcedure(Access(s3), SearchAccessLike(search))


def message(uid: int, *, kind: str = "missingDocument", truth: bool = True, body: bool = True) -> dict[str, Any]:
    mailbox, message_id = "6b0e5a40-0000-1000-8000-00000000000a", str(uuid.uuid1())
    micros = int((WHEN - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1_000_000)
    row = {"messageid": message_id, "mailboxid": mailbox, "uid": uid, "threadid": None, "modseq": 3,
           "flagseen": True, "flagflagged": False, "userflags": ["$work"], "internaldate": micros,
           "save_date": micros, "fullcontentoctets": len(HEADER + BODY), "headercontent": None}
    content = {"messageid": message_id, "headercontent": f"h-{uid}", "bodycontent": f"b-{uid}" if body else None,
               "internaldate": micros, "fullcontentoctets": len(HEADER + BODY)}
    return {"kind": kind, "mailboxid": mailbox, "uid": uid, "messageid": message_id, "user": "u@example.com",
            "slice": 0, "truth": row if truth else None, "content": content, "projected": None}


def orphan(uid: int, *, projected: bool) -> dict[str, Any]:
    return {"kind": "orphanDocument", "mailboxid": "6b0e5a40-0000-1000-8000-00000000000a", "uid": uid,
            "messageid": None, "user": None, "slice": 0, "truth": None, "content": None, "projected": projected}


def run(rows: list[dict[str, Any]], s3: FakeS3, search: FakeSearch, **kwargs: Any) -> list[dict[str, Any]]:
    return list(reindex_partition(procedure(s3, search), None, rows, counters=COUNTERS,
                                  orphan_kind="orphanDocument", **kwargs))


def test_each_item_gets_the_outcome_of_what_happened_to_it():
    search = FakeSearch(refuse={"6b0e5a40-0000-1000-8000-00000000000a:5"})
    rows = [message(1), message(2, truth=False), message(3, body=False), message(4, kind="outdatedDocument"),
            message(5), orphan(6, projected=True), orphan(7, projected=False)]
    by_uid = {o["item"]["uid"]: o for o in run(rows, FakeS3(), search)}
    assert {u: (o["status"], o["counter"]) for u, o in by_uid.items()} == {
        1: ("fixed", "indexedMessageCount"), 2: ("skipped", None), 3: ("failed", None),
        4: ("fixed", "fixedMessageCount"), 5: ("failed", None), 6: ("skipped", None),
        7: ("fixed", "deletedDocumentCount")}
    assert by_uid[3]["error"] == "ValueError: no messageV3 row with blob ids: the content cannot be read"
    assert "mapper_parsing_exception: refused" in by_uid[5]["error"]
    # what is reported is the item itself, never the rows joined to it
    assert set(by_uid[1]["item"]) == {"kind", "mailboxid", "uid", "messageid", "user"}


def test_the_document_is_built_from_the_joined_rows_as_from_the_store():
    search = FakeSearch()
    row = message(1)
    run([row], FakeS3(), search)
    expected_row = {**row["content"], **{k: v for k, v in row["truth"].items() if v is not None},
                    "internaldate": WHEN, "save_date": WHEN}
    assert search.sent == [json.loads(json.dumps(build_document(expected_row, HEADER + BODY, "u@example.com")))]


def test_timestamps_shipped_as_micros_are_utc_and_the_truth_overrides_the_content_row():
    assert from_micros(1_000_000) == datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)
    assert from_micros(WHEN) is WHEN
    merged = merged_row({"headercontent": None, "modseq": 4}, {"headercontent": "h", "modseq": 1})
    assert merged == {"headercontent": "h", "modseq": 4}


def test_contents_are_fetched_many_at_once_never_more_than_the_bound():
    lock, reached = threading.Condition(), threading.Event()
    state = {"now": 0, "most": 0}

    def on_get(key: str) -> None:
        if not key.startswith("h-"):
            return
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
            if state["now"] >= 4:
                reached.set()
                lock.notify_all()
            lock.wait_for(reached.is_set, timeout=DEADLINE)   # hold the request until 4 are in flight
            state["now"] -= 1

    outcomes = run([message(uid) for uid in range(1, 21)], FakeS3(on_get), FakeSearch(), fetch_threads=4)
    assert reached.is_set() and state["most"] == 4
    assert [o["status"] for o in outcomes] == ["fixed"] * 20


def test_a_bulk_request_is_outstanding_while_the_next_batch_is_fetched():
    next_batch_fetched = threading.Event()
    overlapped: list[bool] = []

    def on_get(key: str) -> None:
        if key == "h-3":   # the first message of the second batch
            next_batch_fetched.set()

    requests = itertools.count()

    def on_bulk() -> None:
        # The first request waits for the fetch of the next batch. Two requests may be in flight at once:
        # next() on a count is atomic, so only the first one waits (a test of `overlapped` was not).
        if next(requests) == 0:
            overlapped.append(next_batch_fetched.wait(timeout=DEADLINE))

    outcomes = run([message(uid) for uid in range(1, 5)], FakeS3(on_get), FakeSearch(on_bulk=on_bulk),
                   batch=2, fetch_threads=1, bulk_in_flight=2)
    assert overlapped == [True]
    assert sorted(o["item"]["uid"] for o in outcomes if o["status"] == "fixed") == [1, 2, 3, 4]

