"""Local stack manager: the real backing services on one machine, without Docker.

Downloads the JVM services from Maven Central on first use, runs RabbitMQ and PostgreSQL from
Debian's packages, keeps every byte of data under one git-ignored directory (``.stack/``),
binds everything to loopback and stops only what it started, by pid.

    python -m include.stack up|down|status|logs|env|fetch
"""
