"""Mail names: James's ``Mail<epochMillis>-<20 alphanumerics>``, unique, every character in use."""

from __future__ import annotations

import collections
import re
import time

from mailserver.model.mail import new_mail_name

NAME = re.compile(r"Mail(\d{13})-([A-Za-z0-9]{20})")


def test_a_mail_name_has_james_format_and_the_current_time():
    before = int(time.time() * 1000)
    match = NAME.fullmatch(new_mail_name())
    assert match is not None
    assert before <= int(match.group(1)) <= int(time.time() * 1000)


def test_mail_names_are_unique_and_spread_over_the_62_characters():
    names = [new_mail_name() for _ in range(10_000)]
    assert len(set(names)) == len(names)
    counts = collections.Counter("".join(NAME.fullmatch(n).group(2) for n in names))
    assert len(counts) == 62
    # 200,000 characters: about 3,226 each; a stuck or biased digit would stand far outside this band
    assert all(2_900 < c < 3_550 for c in counts.values()), counts.most_common(3)
    # the last of the 20 characters too (the top base-62 digit of the random number)
    last = collections.Counter(NAME.fullmatch(n).group(2)[-1] for n in names)
    assert len(last) == 62 and max(last.values()) < 260
