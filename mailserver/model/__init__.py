"""Pure domain model: addresses, mailbox paths, ids, flags, message metadata, events, quota.

Nothing here does I/O; adapters and services build on these types.
"""
