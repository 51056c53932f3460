"""Mailbox event bus: a port, an in-process implementation, and the group listeners."""
