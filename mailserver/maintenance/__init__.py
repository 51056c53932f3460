"""Cluster-wide maintenance mode: a switch stored in Cassandra, read through a short cache."""
