"""The message id of a delivery is the same for the same mail and recipient, and only for them."""

from __future__ import annotations

from mailserver.mailets.delivery_id import delivery_message_id
from mailserver.model.address import MailAddress
from mailserver.model.mail import new_mail_name, split_name

ALICE, BOB = MailAddress.of("alice@example.com"), MailAddress.of("bob@example.com")


def test_same_mail_and_recipient_give_the_same_time_based_id():
    name = new_mail_name()

    first, again = delivery_message_id(name, ALICE), delivery_message_id(name, MailAddress.of("Alice@Example.com"))

    assert first is not None and first == again
    assert first.value.version == 1
    millis = int(name[4:name.index("-")])
    assert abs((first.value.time - 0x01B21DD213814000) // 10_000 - millis) <= 1


def test_another_recipient_or_mail_gives_another_id():
    name = new_mail_name()
    ids = {delivery_message_id(name, ALICE), delivery_message_id(name, BOB),
           delivery_message_id(new_mail_name(), ALICE), delivery_message_id(split_name(name, [ALICE]), ALICE),
           delivery_message_id(f"error-{name}", BOB)}

    assert len(ids) == 5


def test_a_name_without_creation_time_is_not_deduplicated():
    assert delivery_message_id("custom-name", ALICE) is None
    assert delivery_message_id("Mail99999999999999-abc", ALICE) is None   # in the future
