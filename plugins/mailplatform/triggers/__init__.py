"""Async triggers run by Airflow's triggerer for the deferrable sensors (no worker slot held)."""
