"""Health checks, Prometheus metrics and structured logs, shaped as James exposes them."""
