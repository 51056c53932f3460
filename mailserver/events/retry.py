"""Retry policy of group listeners: James's exponential backoff with jitter (james-runtime.md §3.4).

James binds these to its defaults in the distributed server (8 retries, first backoff 100 ms,
jitter factor 0.5: about 25 s in all before a dead letter); here they are settings.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 8
    first_backoff: float = 0.1      # seconds
    jitter_factor: float = 0.5

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.first_backoff < 0 or not 0 <= self.jitter_factor <= 1:
            raise ValueError(f"invalid retry policy {self}")

    def delay(self, retry_count: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before attempt ``retry_count`` (1 for the first retry); 0 for a first delivery."""
        if retry_count <= 0:
            return 0.0
        base = self.first_backoff * 2 ** (retry_count - 1)
        jitter = (rng or random).random() * self.first_backoff * self.jitter_factor
        return base + jitter
