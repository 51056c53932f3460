"""Local domains: the ``DomainList`` port and its memory and Cassandra adapters."""
