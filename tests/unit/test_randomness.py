"""mailserver.randomness: identifiers from buffered CSPRNG bytes, never the same bytes twice."""

from __future__ import annotations

import os
import threading
import uuid

import pytest

from mailserver import randomness


def test_uuid4_is_a_version_4_rfc_4122_uuid():
    value = randomness.uuid4()
    assert value.version == 4 and value.variant == uuid.RFC_4122


def test_no_identifier_repeats_across_refills_and_threads():
    drawn: list[uuid.UUID] = []
    lock = threading.Lock()

    def draw() -> None:
        mine = [randomness.uuid4() for _ in range(2_000)]   # 32 KB: several refills of the buffer
        with lock:
            drawn.extend(mine)

    threads = [threading.Thread(target=draw) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(drawn)) == len(drawn) == 8_000


def test_sizes_and_ranges():
    assert len(randomness.token_bytes(5)) == 5
    assert len(randomness.token_bytes(10_000)) == 10_000   # more than a buffer: served whole
    assert len(randomness.token_hex(8)) == 16
    for bits in (1, 7, 8, 9, 128):
        assert all(0 <= randomness.randbits(bits) < 2 ** bits for _ in range(200))
    assert max(randomness.randbits(128) for _ in range(50)) >= 2 ** 120   # the top bits are used
    with pytest.raises(ValueError):
        randomness.randbits(0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_does_not_draw_the_parents_bytes():
    randomness.token_bytes(1)   # the buffer is full: a child that kept it would draw what the parent draws next
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child
        os.close(read)
        os.write(write, randomness.token_bytes(16))
        os._exit(0)
    os.close(write)
    child = os.read(read, 16)
    os.close(read)
    os.waitpid(pid, 0)
    assert child != randomness.token_bytes(16)
