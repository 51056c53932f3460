"""Property tests of the IMAP MIME tree and the SEARCH text walk over generated messages: any shape,
any depth (past the limits too), garbage bodies. They never raise, stay within the part budget, and
BODY/BODYSTRUCTURE is always a response a client can parse."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from imapclient.response_parser import parse_fetch_response

from mailserver.blob.memory import MemoryBlobStore
from mailserver.imap import mime
from mailserver.imap.bodystructure import body_structure
from mailserver.imap.fetch import Content
from mailserver.imap.search import Candidate
from mailserver.mailbox.content import MAX_DEPTH, MAX_PARTS
from mailserver.mailbox.manager import MailboxManager
from mailserver.mailbox.wiring import memory_context
from mailserver.model.mailbox import MailboxPath
from tests.unit.imap.test_imap_nesting import assert_body
from tests.unit.imap.test_imap_nesting_limits import count_parts

LEAF_TYPES = ["text/plain", "text/html; charset=utf-8", "application/pdf; name=a.pdf", "image/png", ""]
MULTIPART_TYPES = ["mixed", "alternative", "digest", "related"]

leaves = st.tuples(st.just("leaf"), st.sampled_from(LEAF_TYPES), st.binary(max_size=40))


def containers(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.tuples(st.just("multipart"), st.sampled_from(MULTIPART_TYPES), st.lists(children, max_size=4)),
        st.tuples(st.just("message"), st.just("rfc822"), children))


trees = st.recursive(leaves, containers, max_leaves=12)


def render(tree: tuple, counter: list[int]) -> bytes:
    kind, subtype, content = tree
    if kind == "leaf":
        header = b"Content-Type: %s\r\n" % subtype.encode() if subtype else b""
        return header + b"\r\n" + content
    if kind == "message":
        return b"Content-Type: message/rfc822\r\n\r\n" + render(content, counter)
    counter[0] += 1
    boundary = b"=_b%d" % counter[0]
    parts = b"".join(b"--" + boundary + b"\r\n" + render(child, counter) + b"\r\n" for child in content)
    return (b"Content-Type: multipart/%s; boundary=\"%s\"\r\n\r\n" % (subtype.encode(), boundary) + parts
            + b"--" + boundary + b"--\r\n")


def wrapped(tree: tuple, levels: int, kinds: list[bool]) -> tuple:
    """``tree`` under ``levels`` more containers (message or single-part multipart, as ``kinds`` say)."""
    for level in range(levels):
        tree = ("message", "rfc822", tree) if kinds[level % len(kinds)] else ("multipart", "mixed", [tree])
    return tree


@pytest.fixture(scope="module")
def mailbox() -> tuple[MailboxManager, MailboxPath]:
    manager = memory_context(MemoryBlobStore()).manager
    path = MailboxPath.inbox("fuzz@example.com")
    manager.create_mailbox(path)
    return manager, path


@settings(max_examples=150, deadline=None, database=None)
@given(tree=trees, levels=st.integers(0, MAX_DEPTH + 30), kinds=st.lists(st.booleans(), min_size=1, max_size=5),
       garbage=st.binary(max_size=30))
def test_any_message_gives_a_bounded_tree_a_valid_bodystructure_and_searchable_text(mailbox, tree, levels, kinds,
                                                                                     garbage):
    raw = b"From: a@example.com\r\nSubject: fuzz\r\n" + render(wrapped(tree, levels, kinds), [0]) + garbage
    root = mime.parse(raw)
    assert count_parts(root) <= MAX_PARTS
    for extensible in (True, False):
        structure = body_structure(root, extensible=extensible)
        assert_body(parse_fetch_response([b"1 (BODY " + structure + b")"])[1][b"BODY"])
    manager, path = mailbox
    meta = manager.append(path, raw).metadata
    content = Content(meta, manager.read_header, lambda m: manager.read_message(m.message_id))
    candidate = Candidate(meta, 1, content, False, 1, meta.uid)
    assert isinstance(candidate.body_text(), str) and isinstance(candidate.all_text(), str)
