"""Protections shared by the protocols: authentication throttling (``auth_throttle``)."""
