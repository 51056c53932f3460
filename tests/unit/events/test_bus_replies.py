"""The event bus's acks: queued by the listener threads, sent by the connection's thread, several per
wake-up of that thread."""

from __future__ import annotations

import pika.exceptions as px

from mailserver.events.rabbitmq import _Replies


class FakeConnection:
    def __init__(self, dead: bool = False) -> None:
        self.callbacks: list = []
        self.dead = dead

    def add_callback_threadsafe(self, callback) -> None:
        if self.dead:
            raise px.ConnectionWrongStateError("connection closed")
        self.callbacks.append(callback)

    def run_callbacks(self) -> None:
        callbacks, self.callbacks = self.callbacks, []
        for callback in callbacks:
            callback()


def test_replies_queued_before_the_connection_thread_runs_go_in_one_wake_up():
    connection = FakeConnection()
    replies = _Replies(connection)
    sent = []
    for tag in (1, 2, 3):
        replies.send(lambda tag=tag: sent.append(tag))
    assert len(connection.callbacks) == 1 and sent == []
    connection.run_callbacks()
    assert sent == [1, 2, 3]


def test_a_reply_after_a_wake_up_schedules_another():
    connection = FakeConnection()
    replies = _Replies(connection)
    sent = []
    replies.send(lambda: sent.append(1))
    connection.run_callbacks()
    replies.send(lambda: sent.append(2))
    assert len(connection.callbacks) == 1
    connection.run_callbacks()
    assert sent == [1, 2]


def test_a_reply_on_a_closed_channel_does_not_stop_the_others(caplog):
    connection = FakeConnection()
    replies = _Replies(connection)
    sent = []

    def closed() -> None:
        raise px.ChannelWrongStateError("channel closed")

    replies.send(closed)
    replies.send(lambda: sent.append(2))
    connection.run_callbacks()
    assert sent == [2]
    assert "delivers the message again" in caplog.text


def test_a_dead_connection_drops_the_replies_and_does_not_raise(caplog):
    connection = FakeConnection(dead=True)
    replies = _Replies(connection)
    replies.send(lambda: None)
    assert "will be delivered again" in caplog.text
    connection.dead = False
    sent = []
    replies.send(lambda: sent.append(1))   # not stuck: a later reply is scheduled again
    connection.run_callbacks()
    assert sent == [1]
