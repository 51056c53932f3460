from __future__ import annotations

import random

import pytest

from mailserver.events.retry import RetryPolicy


def test_james_defaults_wait_about_25_seconds_before_a_dead_letter():
    policy = RetryPolicy()
    no_jitter = sum(policy.first_backoff * 2 ** (n - 1) for n in range(1, policy.max_retries + 1))

    assert (policy.max_retries, policy.first_backoff, policy.jitter_factor) == (8, 0.1, 0.5)
    assert no_jitter == pytest.approx(25.5)


def test_delay_doubles_with_jitter_below_half_the_first_backoff():
    policy, rng = RetryPolicy(first_backoff=0.1, jitter_factor=0.5), random.Random(7)

    assert policy.delay(0) == 0.0
    for count, base in ((1, 0.1), (2, 0.2), (3, 0.4), (8, 12.8)):
        delay = policy.delay(count, rng)
        assert base <= delay < base + 0.05


@pytest.mark.parametrize("kwargs", [{"max_retries": -1}, {"first_backoff": -0.1}, {"jitter_factor": 1.5}])
def test_invalid_policies_are_refused(kwargs):
    with pytest.raises(ValueError):
        RetryPolicy(**kwargs)
