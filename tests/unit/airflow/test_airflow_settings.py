"""``MAILSERVER_AIRFLOW_*``: unset is "not configured"; a half configuration refuses to start."""

from __future__ import annotations

import pytest

from mailserver.airflow.settings import AirflowSettings, AirflowSettingsError

FULL = {"MAILSERVER_AIRFLOW_URL": "http://airflow:8080/", "MAILSERVER_AIRFLOW_USERNAME": "admin",
        "MAILSERVER_AIRFLOW_PASSWORD": "s3cret"}


def test_unset_or_empty_url_is_not_configured():
    assert AirflowSettings.from_env({}) is None
    assert AirflowSettings.from_env({"MAILSERVER_AIRFLOW_URL": "  ", "MAILSERVER_AIRFLOW_USERNAME": "x"}) is None


def test_full_configuration_and_defaults():
    settings = AirflowSettings.from_env(FULL)
    assert settings is not None
    assert (settings.url, settings.username, settings.password) == ("http://airflow:8080", "admin", "s3cret")
    assert (settings.poll_interval, settings.unreachable_timeout, settings.http_timeout) == (5.0, 300.0, 30.0)
    assert "s3cret" not in repr(settings)   # never in a log line
    tuned = AirflowSettings.from_env({**FULL, "MAILSERVER_AIRFLOW_POLL_INTERVAL": "0.5",
                                      "MAILSERVER_AIRFLOW_UNREACHABLE_TIMEOUT": "60"})
    assert (tuned.poll_interval, tuned.unreachable_timeout) == (0.5, 60.0)


@pytest.mark.parametrize(("change", "message"), [
    ({"MAILSERVER_AIRFLOW_PASSWORD": ""}, "MAILSERVER_AIRFLOW_PASSWORD is not"),
    ({"MAILSERVER_AIRFLOW_USERNAME": ""}, "MAILSERVER_AIRFLOW_USERNAME is not"),
    ({"MAILSERVER_AIRFLOW_URL": "airflow:8080"}, "is not an http"),
    ({"MAILSERVER_AIRFLOW_POLL_INTERVAL": "soon"}, "MAILSERVER_AIRFLOW_POLL_INTERVAL"),
    ({"MAILSERVER_AIRFLOW_POLL_INTERVAL": "0"}, "strictly positive"),
])
def test_malformed_configuration_is_refused(change, message):
    with pytest.raises(AirflowSettingsError, match=message):
        AirflowSettings.from_env({**FULL, **change})
