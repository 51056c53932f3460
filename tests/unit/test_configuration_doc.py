"""docs/configuration.md is generated from the settings tree, and the tree holds every variable the code reads."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from mailserver.airflow.settings import AirflowSettings
from mailserver.blob.config import BlobStoreConfig
from mailserver.blob.s3 import S3Config
from mailserver.cassandra.config import CassandraConfig
from mailserver.runtime.settings import ServeSettings
from mailserver.search.config import SearchConfig
from mailserver.settings import AREAS, SettingsError, SmtpSettings, variables
from mailserver.settings.doc import DOC, markdown
from mailserver.tasks.wiring import TaskSettings
from mailserver.webadmin.auth import AuthConfig
from mailserver.webadmin.server import DEFAULT_HOST, DEFAULT_PORT, ServerConfig

PACKAGE = Path(__file__).resolve().parents[2] / "mailserver"
# A variable's name: the server's own, or one of the backends' shared names (a prefix such as
# ``MAILSERVER_BLOB_*`` in a message is not one).
VARIABLE = re.compile(r"\b(?:MAILSERVER|CASSANDRA|S3|OPENSEARCH|RABBITMQ|AWS)_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_])"
                      r"|\bAMQP_URL\b")


def test_configuration_doc_is_current():
    assert DOC.read_text() == markdown(), "run: python -m mailserver.settings.doc --write"


def names_in_strings(source: str) -> set[str]:
    """Variable names in the string literals of a module (code names such as CASSANDRA_MIGRATION are not)."""
    return {name for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            for name in VARIABLE.findall(node.value)}


def test_every_variable_named_in_the_code_is_in_the_tree():
    named = {name: path for path in PACKAGE.rglob("*.py") for name in names_in_strings(path.read_text())}
    missing = {name: str(path.relative_to(PACKAGE.parent)) for name, path in named.items() if name not in variables()}
    assert not missing, f"add these to mailserver/settings/: {missing}"
    assert len(named) > 90   # the scan sees the code's variables at all


def test_the_scan_finds_names_and_skips_prefixes():
    assert names_in_strings('x = f"{a}"; y = "set MAILSERVER_SMTP_PORT or AMQP_URL, see MAILSERVER_BLOB_*"') == {
        "MAILSERVER_SMTP_PORT", "AMQP_URL"}


def test_every_variable_is_documented_once_with_a_meaning():
    fields = [field for area in AREAS.values() for field in area.model_fields.values()]
    names = [field.alias for field in fields]
    assert len(names) == len(set(names))
    assert all(field.description for field in fields)


def test_the_readers_defaults_are_the_trees():
    """An empty environment gives each reader the configuration its dataclass defaults to."""
    assert ServeSettings.from_env({}) == ServeSettings()
    assert BlobStoreConfig.from_env({}) == BlobStoreConfig()
    assert CassandraConfig.from_env({}) == CassandraConfig()
    assert SearchConfig.from_env({"OPENSEARCH_URL": "http://127.0.0.1:9200"}) == SearchConfig()
    assert TaskSettings.from_env({"MAILSERVER_NODE_NAME": "n1"}) == TaskSettings("n1")
    assert ServerConfig.from_env({"MAILSERVER_WEBADMIN_AUTH": "disabled"}) == ServerConfig(
        DEFAULT_HOST, DEFAULT_PORT, AuthConfig.disabled())
    s3 = {"S3_ENDPOINT": "http://s3", "S3_ACCESS_KEY": "a", "S3_SECRET_KEY": "s"}
    assert S3Config.from_env(s3) == S3Config("http://s3", "a", "s")
    airflow = {"MAILSERVER_AIRFLOW_URL": "http://af", "MAILSERVER_AIRFLOW_USERNAME": "u",
               "MAILSERVER_AIRFLOW_PASSWORD": "p"}
    assert AirflowSettings.from_env(airflow) == AirflowSettings("http://af", "u", "p")


def test_a_given_mapping_is_the_only_source(monkeypatch):
    monkeypatch.setenv("MAILSERVER_SMTP_PORT", "2626")
    assert ServeSettings.from_env({}).smtp.port == 2525
    assert SmtpSettings.from_env().port == 2626


@pytest.mark.parametrize(("env", "message"), [
    ({"MAILSERVER_SMTP_REQUIRE_STARTTLS": "maybe"}, "MAILSERVER_SMTP_REQUIRE_STARTTLS: 'maybe' is not a boolean"),
    ({"MAILSERVER_SMTP_PORT": "smtp"}, "MAILSERVER_SMTP_PORT: 'smtp' is not an integer"),
    ({"MAILSERVER_HEALTH_INTERVAL_MS": "soon"}, "MAILSERVER_HEALTH_INTERVAL_MS: 'soon' is not a duration"),
    ({"MAILSERVER_BLOB_CACHE_BYTES": "lots"}, "MAILSERVER_BLOB_CACHE_BYTES: 'lots' is not a size"),
])
def test_a_malformed_value_stops_the_server_naming_its_variable(env, message):
    with pytest.raises(SettingsError, match=f"^{message}"):
        ServeSettings.from_env(env)


def test_durations_take_james_units_and_a_bare_number_is_the_names_unit():
    assert ServeSettings.from_env({"MAILSERVER_HEALTH_INTERVAL_MS": "500"}).health_interval == 0.5
    assert ServeSettings.from_env({"MAILSERVER_HEALTH_INTERVAL_MS": "3s"}).health_interval == 3.0
    assert ServeSettings.from_env({"MAILSERVER_IMAP_IDLE_TIMEOUT_SECONDS": "1h"}).imap.idle_timeout == 3600.0


def test_one_set_of_boolean_words():
    copies = [str(path.relative_to(PACKAGE.parent)) for path in PACKAGE.rglob("*.py")
              if '"yes", "on"' in path.read_text()]
    assert copies == ["mailserver/settings/values.py"]
