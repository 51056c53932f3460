"""JMAP push: state changes to EventSource (RFC 8620 7.3) and WebSocket (RFC 8887) connections."""
