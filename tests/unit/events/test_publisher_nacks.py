"""A nacked publish is tried again, James's way (two more times, 100 ms apart), then refused."""

from __future__ import annotations

import threading

import pika.exceptions as px
import pytest

from mailserver.events.publisher import ConfirmingPublisher, PublishError


class NackingChannel:
    def __init__(self, nacks: int) -> None:
        self.nacks, self.published = nacks, 0
        self.is_open = True

    def basic_publish(self, *_args, **_kwargs) -> None:
        self.published += 1
        if self.published <= self.nacks:
            raise px.NackError([])


class FakeLink:
    def __init__(self, channel: NackingChannel) -> None:
        self.channel = channel
        self.lock = threading.Lock()   # held while publishing, as a real link's

    def usable(self) -> bool:
        return True


def publisher_over(channel: NackingChannel) -> ConfirmingPublisher:
    # No broker: the link is the seam (and no heartbeats to keep)
    return ConfirmingPublisher("amqp://guest:guest@127.0.0.1:1/%2F", connections=1, nack_retries=2, heartbeat=0,
                               open_link=lambda params: FakeLink(channel))


def test_a_publish_nacked_twice_is_confirmed_at_the_third_attempt():
    channel = NackingChannel(nacks=2)
    publisher_over(channel).publish("exchange", "", b"event")
    assert channel.published == 3


def test_a_publish_nacked_every_time_is_refused_after_three_attempts():
    channel = NackingChannel(nacks=10)
    with pytest.raises(PublishError, match="nacked"):
        publisher_over(channel).publish("exchange", "", b"event")
    assert channel.published == 3
