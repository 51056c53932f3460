"""The deleted-messages vault (James's ``DeletedMessageVault``): the port and the blob-store based
vault (``api``), its metadata in memory (``memory``) or James's Cassandra tables (``cassandra``),
the query (``query``), the pre-deletion hook (``hook``) and the settings (``config``)."""
