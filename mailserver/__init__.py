"""A distributed mail server modeled on the Apache James distributed server."""

__version__ = "0.1.0"
