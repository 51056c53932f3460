"""Cassandra access: configuration and session, the James-compatible schema, schema versions,
migrations and the fault seam used by tests to produce real inconsistencies."""
