"""docs/schema.md is generated from the schema code and must not drift from it."""

from __future__ import annotations

from pathlib import Path

from mailserver.cassandra.schema import TABLES, markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "schema.md"


def test_schema_doc_is_current():
    assert DOC.read_text() == markdown(), "run: python -m mailserver.cassandra.schema > docs/schema.md"


def test_every_table_states_its_role_and_is_named_once():
    names = [t.name.lower() for t in TABLES]
    assert len(names) == len(set(names))
    assert all(t.role and t.partition_key for t in TABLES)
