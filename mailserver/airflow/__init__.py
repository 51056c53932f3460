"""Airflow as the runner of the maintenance procedures: a port (``api.DagRuns``), its adapter on
Airflow's REST API v2 (``http``), a memory twin for unit tests (``memory``), the settings that
turn it on (``settings``), and the one table from James's admin routes to DAG runs (``procedures``).
"""
