"""The stack gives its mail server the Airflow admin's password before Airflow ever started."""

from __future__ import annotations

import json
import stat

from include.stack.services.airflow import Airflow
from include.stack.services.mailserver import MailServer
from include.stack.settings import StackSettings


def test_fresh_machine_the_password_is_written_where_the_auth_manager_reads_it(tmp_path):
    settings = StackSettings(root=tmp_path)
    env = MailServer(settings).airflow_env()
    airflow = Airflow(settings)
    assert env["MAILSERVER_AIRFLOW_URL"] == f"http://127.0.0.1:{settings.ports.airflow}"
    assert env["MAILSERVER_AIRFLOW_USERNAME"] == "admin"
    assert json.loads(airflow.passwords_file.read_text()) == {"admin": env["MAILSERVER_AIRFLOW_PASSWORD"]}
    assert stat.S_IMODE(airflow.passwords_file.stat().st_mode) == 0o600
    # Stable: the next start (or Airflow's own start) keeps it.
    assert MailServer(settings).airflow_env()["MAILSERVER_AIRFLOW_PASSWORD"] == env["MAILSERVER_AIRFLOW_PASSWORD"]


def test_a_password_airflow_generated_is_the_one_used(tmp_path):
    settings = StackSettings(root=tmp_path)
    airflow = Airflow(settings)
    airflow.home.mkdir(parents=True)
    airflow.passwords_file.write_text(json.dumps({"admin": "generated-by-airflow", "other": "x"}) + "\n")
    assert MailServer(settings).env()["MAILSERVER_AIRFLOW_PASSWORD"] == "generated-by-airflow"
    assert json.loads(airflow.passwords_file.read_text())["other"] == "x"
