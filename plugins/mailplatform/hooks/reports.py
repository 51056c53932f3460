"""Reads the JSON report a maintenance Spark job left in S3 (``s3_default`` connection)."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseHook

from spark_apps.common.reports import ReportLocation, read_report, s3_client


class MaintenanceReportHook(BaseHook):
    conn_name_attr = "s3_conn_id"
    default_conn_name = "s3_default"
    conn_type = "aws"
    hook_name = "Maintenance reports (S3)"

    def __init__(self, s3_conn_id: str = default_conn_name) -> None:
        super().__init__()
        self.s3_conn_id = s3_conn_id

    def client(self) -> Any:
        conn = self.get_connection(self.s3_conn_id)
        extra = conn.extra_dejson
        return s3_client({"S3_ENDPOINT": extra.get("endpoint_url", ""), "S3_ACCESS_KEY": conn.login or "",
                          "S3_SECRET_KEY": conn.password or "", "S3_REGION": extra.get("region_name", "us-east-1")})

    def read(self, job: str, run_key: str) -> dict[str, Any]:
        return read_report(ReportLocation.for_run(job, run_key), self.client())
