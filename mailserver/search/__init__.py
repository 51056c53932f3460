"""Search: James's OpenSearch mailbox index (mapping, aliases, routing, documents), its indexing
listener and the search port with its OpenSearch and memory adapters.

``config``, ``mapping`` and ``document`` import nothing beyond the standard library and
``mailserver.model`` / ``mailserver.mailbox.content``, so Spark executors can build documents;
``opensearch`` and ``index`` need ``opensearch-py``.
"""
