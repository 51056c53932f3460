"""Schema migrations, one module per transition (James numbering), and the runner that applies them."""

from mailserver.cassandra.migrations.base import Migration, MigrationResult, MigrationStatus
from mailserver.cassandra.migrations.runner import MIGRATIONS, MigrationError, MigrationPartial, migrate

__all__ = ["MIGRATIONS", "Migration", "MigrationError", "MigrationPartial", "MigrationResult", "MigrationStatus",
           "migrate"]
