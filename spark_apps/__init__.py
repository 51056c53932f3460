"""PySpark applications of the maintenance platform: one module per job in ``jobs/``."""
