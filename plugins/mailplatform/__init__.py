"""Airflow hooks, operators and sensors of the mail-server maintenance platform.

Provider-style layout: hooks own the clients and read Airflow connections, operators stay
thin, sensors only poll. DAG files import from here and never name a host or a secret.
"""
