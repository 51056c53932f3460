"""The WebAdmin HTTP API: James's routes, JSON shapes, status codes and authentication."""
