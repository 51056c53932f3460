"""One table of durations through every place that reads them: WebAdmin's query parameters, a Spark
job's command line and a DAG's params (form schema and check_params). They share
``mailserver.model.james_units``; this keeps them from drifting apart again (``1month`` was once
taken by WebAdmin and refused by the Spark jobs, ``milliseconds`` the other way round)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mailserver.webadmin.routes import params as webadmin_params
from spark_apps.common.procedure import ProcedureRunner
from spark_apps.jobs.recover_lost_mails import RecoverLostMails
from tests.support.dag_files import parsed_dag

MONTH = timedelta(seconds=31556952) / 12

# text -> the duration (a bare number in seconds: WebAdmin's tasks and the jobs), None when refused
TABLE = [
    ("90", timedelta(seconds=90)),
    ("0s", timedelta(0)),
    ("30s", timedelta(seconds=30)),
    ("100ms", timedelta(milliseconds=100)),
    ("2 msecs", timedelta(milliseconds=2)),
    ("5 MINUTES", timedelta(minutes=5)),
    (" 3 d ", timedelta(days=3)),
    ("1w", timedelta(weeks=1)),
    ("1month", MONTH),
    ("2 Months", 2 * MONTH),
    ("1y", 12 * MONTH),
    ("2147483647", timedelta(seconds=2147483647)),
    ("", None),
    ("soon", None),
    ("1 fortnight", None),
    ("2 milliseconds", None),   # not one of James's spellings
    ("2 millis", None),
    ("-1h", None),
    ("1.5h", None),
    ("2 h 30 m", None),
    ("\u00a02s", None),         # a no-break space is not Java's \s
    ("2147483648s", None),      # past James's int
    ("9" * 30, None),
    ("2147483647 years", None),
]


def webadmin(text: str) -> timedelta | None:
    try:
        return webadmin_params.parse_duration(text, "seconds")
    except ValueError:
        return None


def spark_job(text: str, monkeypatch, capsys) -> timedelta | None:
    monkeypatch.setenv("AMQP_URL", "amqp://guest:guest@localhost/")
    monkeypatch.setenv("S3_ENDPOINT", "http://localhost:9000")
    job = RecoverLostMails()
    try:
        # "=": a value starting with "-" is then the option's, not taken for another option
        ProcedureRunner(job).parse([f"--older-than={text}", "--no-broker-check", "--no-orphans"])
    except SystemExit:   # argparse's refusal: usage and the reason on stderr
        assert f"{text!r} is not a duration" in capsys.readouterr().err
        return None
    return job.older_than


@pytest.fixture(scope="module")
def recover_dag():
    return parsed_dag("recover_lost_mails")


def dag_accepts(dag, text: str) -> bool:
    from mailplatform.param_checks import refusal

    return refusal(dag, {"older_than": text}) is None


@pytest.mark.parametrize(("text", "expected"), TABLE)
def test_every_entry_point_reads_a_duration_alike(text, expected, monkeypatch, capsys, recover_dag):
    assert webadmin(text) == expected
    assert spark_job(text, monkeypatch, capsys) == expected
    assert dag_accepts(recover_dag, text) is (expected is not None)


def test_a_refusal_names_the_text_at_every_entry_point(monkeypatch, capsys, recover_dag):
    from mailplatform.param_checks import refusal

    with pytest.raises(ValueError, match="Unknown unit: fortnight"):   # James's words, WebAdmin's details
        webadmin_params.parse_duration("1 fortnight", "seconds")
    assert spark_job("1 fortnight", monkeypatch, capsys) is None
    assert "param older_than: '2147483648s' is not a duration" in refusal(recover_dag, {"older_than": "2147483648s"})
