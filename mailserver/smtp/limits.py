"""Connection caps of the SMTP server: its replies to a session over a cap.

The counting is shared with IMAP (``mailserver.serving.connection_caps``, James's
``connectionLimit`` / ``connectionLimitPerIP``):

* more than ``total`` sessions open -> ``421 4.7.0 Too many connections``;
* more than ``per_ip`` sessions from one address -> ``421 4.7.0 Too many connections from
  your address``;

both sent instead of the greeting, then the connection is closed. ``None`` lifts a cap.
"""

from __future__ import annotations

from mailserver.serving.connection_caps import ConnectionCaps, Over

TOO_MANY_CONNECTIONS = "421 4.7.0 Too many connections, try again later"
TOO_MANY_FROM_ADDRESS = "421 4.7.0 Too many connections from your address, try again later"
_REPLIES = {Over.TOTAL: TOO_MANY_CONNECTIONS, Over.ADDRESS: TOO_MANY_FROM_ADDRESS}


class ConnectionLimits(ConnectionCaps):
    def refusal(self, ip: str | None) -> str | None:
        """The reply refusing a session just opened (already counted), or None."""
        over = self.over(ip)
        return None if over is None else _REPLIES[over]
