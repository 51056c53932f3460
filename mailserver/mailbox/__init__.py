"""Mailboxes and messages: storage ports, their memory and Cassandra adapters, and the manager."""
