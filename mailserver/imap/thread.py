"""THREAD (RFC 5256 section 3): the ORDEREDSUBJECT and REFERENCES algorithms and the
``* THREAD`` reply.

Everything here walks with loops and explicit stacks, never recursion: a chain of 100,000 nested
replies is a tree 100,000 levels deep. The loop check of REFERENCES step 1 walks up the parent
chain only when the would-be child already has children (a new message has none), so threading a
mailbox in arrival order stays linear. A mailbox crafted to make those walks long (deep chains
re-parented again and again) cannot hold a worker: the walks share a budget proportional to the
number of messages, and THREAD answers ``NO [LIMIT]`` when it is spent. A message contributes at
most ``MAX_REFERENCES`` ids (its last ones: the last reference decides its parent).

Dummy messages (ids referenced but not among the searched messages) have no number; after
pruning they remain only at the top level, with two children or more, and are written as
``((a)(b))`` the way RFC 5256's examples show.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from email.message import Message
from itertools import pairwise

from mailserver.imap.base_subject import BaseSubject, base_subject
from mailserver.imap.envelope import raw_value
from mailserver.imap.parser import Atom, ParseError, Token
from mailserver.imap.search import Candidate
from mailserver.imap.sort import sent_date

ALGORITHMS = ("ORDEREDSUBJECT", "REFERENCES")
MAX_REFERENCES = 256
# Parent-chain steps of the loop checks allowed per message threaded (plus a floor): ordinary
# mailboxes use a few per message; only a crafted one comes near.
LOOP_STEPS_PER_MESSAGE = 64
LOOP_STEPS_FLOOR = 100_000


class ThreadTooCostly(Exception):
    """The REFERENCES loop checks spent their budget: the mailbox is built to make threading quadratic."""


@dataclass
class ThreadMessage:
    number: int          # what the reply names: the sequence number, or the uid for UID THREAD
    seq: int             # the tie-breaker of equal sent dates
    sent: float
    subject: BaseSubject
    message_id: str | None
    references: list[str]


@dataclass(eq=False)
class Node:
    message: ThreadMessage | None            # None: a dummy
    children: list[Node] = field(default_factory=list)
    parent: Node | None = None


def parse_algorithm(token: Token | None) -> str:
    name = token.upper() if isinstance(token, Atom) else None
    if name not in ALGORITHMS:
        raise ParseError(f"unknown THREAD algorithm {token!s} (ORDEREDSUBJECT or REFERENCES)")
    return name


def thread_message(candidate: Candidate, number: int) -> ThreadMessage:
    """Blocking (reads the header): what threading needs of one message."""
    fields = candidate.content.fields
    own_ids = message_ids(raw_value(fields, "message-id"))
    return ThreadMessage(number, candidate.seq, sent_date(fields, candidate.meta.internal_date),
                         base_subject(raw_value(fields, "subject")), own_ids[0] if own_ids else None,
                         references(fields))


def message_ids(value: str | None) -> list[str]:
    """The ``<id-left@id-right>`` of a field, in order, without their brackets (compared case-sensitively)."""
    ids: list[str] = []
    if not value:
        return ids
    at = 0
    while (opening := value.find("<", at)) >= 0:
        closing = value.find(">", opening + 1)
        if closing < 0:
            break
        candidate = "".join(value[opening + 1:closing].split())
        if "@" in candidate and "<" not in candidate:
            ids.append(candidate)
        at = closing + 1
    return ids


def references(fields: Message) -> list[str]:
    """References' ids, or else In-Reply-To's first valid one."""
    ids = message_ids(raw_value(fields, "references"))[-MAX_REFERENCES:]
    return ids or message_ids(raw_value(fields, "in-reply-to"))[:1]


def _sort_key(node: Node) -> tuple[float, int]:
    """Sent date then sequence number; a dummy sorts as its first child (its children are sorted)."""
    while node.message is None:
        node = node.children[0]
    return node.message.sent, node.message.seq


# -- ORDEREDSUBJECT ------------------------------------------------------------------------------------
def ordered_subject(messages: Iterable[ThreadMessage]) -> list[Node]:
    """Messages grouped by base subject; in each group the earliest is the parent of the others;
    the groups ordered by the sent date of their first message."""
    ordered = sorted(messages, key=lambda m: (m.subject.key, m.sent, m.seq))
    threads: list[Node] = []
    subject: str | None = None
    for message in ordered:
        if threads and message.subject.key == subject:
            threads[-1].children.append(Node(message))
        else:
            threads.append(Node(message))
            subject = message.subject.key
    threads.sort(key=_sort_key)
    return threads


# -- REFERENCES ----------------------------------------------------------------------------------------
def references_threads(messages: Iterable[ThreadMessage]) -> list[Node]:
    roots = _prune(_link(sorted(messages, key=lambda m: m.seq)))
    roots.sort(key=_sort_key_of_sorted_dummy)                     # step 4
    roots = _merge_by_subject(roots)                               # step 5
    _sort_siblings(roots)                                          # step 6
    return roots


def _link(messages: Sequence[ThreadMessage]) -> list[Node]:
    """Step 1 and 2: the parent/child links the References make; the nodes without a parent."""
    by_id: dict[str, Node] = {}
    nodes: list[Node] = []   # every node, in creation order: the roots are taken in that order
    budget = _LoopBudget(LOOP_STEPS_FLOOR + LOOP_STEPS_PER_MESSAGE * len(messages))
    unlinked: set[Node] = set()   # parents a child left: their lists are cleaned once, at the end

    def node_of(message_id: str) -> Node:
        node = by_id.get(message_id)
        if node is None:
            node = by_id[message_id] = Node(None)
            nodes.append(node)
        return node

    for message in messages:
        existing = by_id.get(message.message_id) if message.message_id is not None else None
        if existing is not None and existing.message is None:
            current = existing                        # referenced before: the dummy becomes this message
            current.message = message
        else:                                         # a new id, no id or a duplicate: a node of its own
            current = Node(message)
            nodes.append(current)
            if message.message_id is not None and existing is None:
                by_id[message.message_id] = current
        chain = [node_of(reference) for reference in message.references]
        for parent, child in pairwise(chain):
            if child.parent is None and not _would_loop(parent, child, budget):
                _attach(parent, child)
        if current.parent is not None:                # step 1.B: the last reference decides
            unlinked.add(current.parent)              # (a list remove per message would be quadratic)
            current.parent = None
        if chain and not _would_loop(chain[-1], current, budget):
            _attach(chain[-1], current)
    for parent in unlinked:   # a child moved back to the same parent is listed twice: its last place counts
        kept = dict.fromkeys(child for child in reversed(parent.children) if child.parent is parent)
        parent.children = list(reversed(kept))
    return [node for node in nodes if node.parent is None]


class _LoopBudget:
    def __init__(self, steps: int) -> None:
        self.left = steps

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise ThreadTooCostly("threading this mailbox by REFERENCES costs too much")


def _would_loop(parent: Node, child: Node, budget: _LoopBudget) -> bool:
    """Whether ``parent`` is ``child`` or one of its descendants."""
    if parent is child:
        return True
    if not child.children:
        return False
    node: Node | None = parent
    while node is not None:
        budget.spend()
        if node is child:
            return True
        node = node.parent
    return False


def _attach(parent: Node, child: Node) -> None:
    child.parent = parent
    parent.children.append(child)


def _prune(roots: list[Node]) -> list[Node]:
    """Step 3: dummies without children go; a dummy's children take its place, except at the top
    level where a dummy with several children stays."""
    pending: list[Node] = []
    top = _prune_level(roots, at_top=True, pending=pending)
    while pending:
        node = pending.pop()
        node.children = _prune_level(node.children, at_top=False, pending=pending)
    return top


def _prune_level(nodes: list[Node], *, at_top: bool, pending: list[Node]) -> list[Node]:
    kept: list[Node] = []
    queue = list(reversed(nodes))   # a stack: promoted children are examined next, in their order
    while queue:
        node = queue.pop()
        if node.message is None and (not node.children or not at_top or len(node.children) == 1):
            queue.extend(reversed(node.children))
            continue
        kept.append(node)
        pending.append(node)
    return kept   # parent links are not used after step 1: they are left as they were


def _sort_key_of_sorted_dummy(node: Node) -> tuple[float, int]:
    if node.message is None:
        node.children.sort(key=_sort_key)
    return _sort_key(node)


def _thread_subject(node: Node) -> BaseSubject:
    first = node.message if node.message is not None else node.children[0].message
    assert first is not None   # the children of a top-level dummy are messages or dummies of messages
    return first.subject


def _merge_by_subject(roots: list[Node]) -> list[Node]:
    """Step 5: top-level threads with the same base subject become one."""
    table: dict[str, Node] = {}
    for node in roots:                                                           # 5.B
        key = _thread_subject_key(node)
        if not key:
            continue
        held = table.get(key)
        if held is None or (held.message is not None and   # a dummy, else an original, is preferred
                            (node.message is None or (held.message.subject.is_reply and
                                                      not node.message.subject.is_reply))):
            table[key] = node
    slots: dict[Node, int] = {node: index for index, node in enumerate(roots)}   # where each top-level node is
    result: list[Node | None] = list(roots)
    for node in roots:                                                           # 5.C
        if node not in slots:
            continue   # merged into another thread already
        key = _thread_subject_key(node)
        held = table.get(key) if key else None
        if held is None or held is node:
            continue
        if held.message is None and node.message is None:
            held.children.extend(node.children)
        elif held.message is None:
            held.children.append(node)
        elif node.message is not None and node.message.subject.is_reply and not held.message.subject.is_reply:
            held.children.append(node)
        else:
            dummy = Node(None, [held, node])
            slot = slots.pop(held)
            result[slot] = dummy
            slots[dummy] = slot
            table[key] = dummy
        result[slots.pop(node)] = None
    return [node for node in result if node is not None]


def _thread_subject_key(node: Node) -> str:
    return _thread_subject(node).key


def _sort_siblings(roots: list[Node]) -> None:
    """Step 6: every set of siblings by sent date, the deepest first (a dummy sorts as its first child)."""
    order: list[Node] = []
    stack = list(roots)
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(node.children)
    for node in reversed(order):   # every node after all of its descendants
        node.children.sort(key=_sort_key)
    roots.sort(key=_sort_key)


# -- the reply ------------------------------------------------------------------------------------------
def render(threads: Sequence[Node]) -> bytes:
    """``* THREAD`` and the threads: ``(1 2 (3)(4 5))``: a message followed by its only child, or by
    its children each in parentheses."""
    out: list[bytes] = [b"* THREAD"]
    if threads:
        out.append(b" ")
    stack: list[Node | bytes] = []
    for node in reversed(threads):
        stack.extend((b")", node, b"("))
    while stack:
        item = stack.pop()
        if isinstance(item, bytes):
            out.append(item)
            continue
        node = item
        while node.message is None and len(node.children) == 1:
            node = node.children[0]
        if node.message is not None:
            out.append(b"%d" % node.message.number)
            if not node.children:
                continue
            out.append(b" ")
            if len(node.children) == 1:
                stack.append(node.children[0])
                continue
        for child in reversed(node.children):
            stack.extend((b")", child, b"("))
    out.append(b"\r\n")
    return b"".join(out)
