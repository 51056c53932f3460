"""The Airflow REST API adapter against the contract the memory adapter also passes, on the stack's Airflow.

The DAG is the message-inconsistency repair in dry run, scoped to a user of this session with one
empty mailbox (``check_params`` refuses a user with neither account nor mailbox): a real run
(health sensor, Spark, report) that reads little and writes nothing.
"""

from __future__ import annotations

import httpx
import pytest

from mailserver.airflow.http import HttpDagRuns
from tests.contract.dag_runs_contract import DagRunsContract

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


class StaleTokenOnce(httpx.HTTPTransport):
    """The real transport, sending once (when ``stale``) a token the api-server does not accept."""

    def __init__(self) -> None:
        super().__init__()
        self.stale = False
        self.logins = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/auth/token":
            self.logins += 1
        elif self.stale:
            self.stale = False
            request.headers["Authorization"] = "Bearer not-a-jwt"
        return super().handle_request(request)


@pytest.fixture
def dag_runs(http_dag_runs) -> HttpDagRuns:
    return http_dag_runs


@pytest.fixture
def dag_id() -> str:
    return "solve_message_inconsistencies"


@pytest.fixture(scope="module")
def contract_user(stack_keyspace) -> str:
    from tests.support.maintenance import seed_mail

    return seed_mail(stack_keyspace, users=1, mailboxes_per_user=1, messages_per_mailbox=0).users[0].value


@pytest.fixture
def conf(contract_user) -> dict:
    return {"dry_run": True, "user": contract_user}


@pytest.fixture
def declared() -> set[str]:
    return {"dry_run", "rate", "slices", "user", "mailbox_ids"}


@pytest.fixture
def finish_timeout() -> float:
    return 1200.0   # a Spark run on two shared cores, maybe behind another run (max_active_runs=1)


class TestHttpDagRuns(DagRunsContract):
    pause = 5.0

    def test_a_refused_token_is_renewed(self, airflow_settings, dag_id):
        transport = StaleTokenOnce()
        dag_runs = HttpDagRuns(airflow_settings, transport=transport)
        try:
            dag_runs.dag(dag_id)
            transport.stale = True   # the next call's token: what a restarted api-server makes of the cached one
            assert dag_runs.dag(dag_id).dag_id == dag_id
            assert transport.logins == 2
        finally:
            dag_runs.close()

    def test_wrong_credentials_are_a_clear_error(self, airflow_settings, dag_id):
        from dataclasses import replace

        from mailserver.airflow.api import AirflowError

        runs = HttpDagRuns(replace(airflow_settings, password="wrong"))
        with pytest.raises(AirflowError, match="refused the credentials of 'admin'"):
            runs.dag(dag_id)
