"""The event loops the protocol servers can run on, by name: pure, so the settings can name them
without importing the loops themselves (the settings travel to Spark drivers, uvloop does not)."""

from __future__ import annotations

EVENT_LOOP_NAMES = ("uvloop", "asyncio")
DEFAULT_EVENT_LOOP = "uvloop"
