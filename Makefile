# The two commands of the README are `make run` and `make test`; the rest are building blocks.
SHELL := /bin/bash
PY := .venv/bin/python
PYTEST_ARGS ?=
# The directories `make typecheck` holds at zero mypy errors.
TYPECHECKED := mailserver plugins spark_apps include dags

.PHONY: bootstrap run stop status logs test test-cluster unit fuzz integration lint typecheck lock compose-config

bootstrap:            ## Debian packages, .venv from the lock, JVM artifacts (idempotent)
	@./include/bootstrap.sh

run: bootstrap        ## start the whole platform (backends + PostgreSQL + Airflow), print URLs
	@$(PY) -m include.stack up

stop:                 ## stop everything the stack started
	@$(PY) -m include.stack down

status:
	@$(PY) -m include.stack status

logs:
	@$(PY) -m include.stack logs

test: bootstrap       ## the whole suite against real services (starts the backends it needs), the multi-node e2e included
	@$(PY) -m ruff check .
	@$(MAKE) --no-print-directory typecheck
	@$(PY) -m include.stack up --profile backends
	@# Two workers: the unit tests beside the rest (tests/conftest.py, pytest_xdist_make_scheduler).
	@$(PY) -m pytest -n 2 --junitxml=.stack/last-test-run.xml $(PYTEST_ARGS)

test-cluster: bootstrap  ## the multi-node e2e alone (make test runs them too): three-node Cassandra, reindex on the Spark cluster
	@$(PY) -m include.stack up --profile backends
	@$(PY) -m pytest -m cluster_suite $(PYTEST_ARGS)

unit: bootstrap       ## unit tests only: no servers
	@$(PY) -m pytest tests/unit $(PYTEST_ARGS)

fuzz: bootstrap       ## the fuzzers of tests/unit/fuzz, random, 20x the examples of `make test` (FUZZ_FACTOR=n for n x)
	@HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest tests/unit/fuzz --timeout=7200 --hypothesis-show-statistics $(PYTEST_ARGS)

lint:
	@$(PY) -m ruff check .
	@$(MAKE) --no-print-directory typecheck

typecheck:            ## mypy, configured in pyproject.toml
	@$(PY) -m mypy $(TYPECHECKED)

lock:                 ## re-resolve requirements.txt from requirements.in (deliberate upgrades only)
	@rm -rf .lock-venv && python3.11 -m venv .lock-venv && .lock-venv/bin/pip install -q uv==0.9.5
	@.lock-venv/bin/uv pip install -q --python .lock-venv/bin/python -r requirements.in
	@(echo "# Lock of requirements.in for Python 3.11 (Airflow's constraints file is not reachable: this is ours)."; \
	  echo "# Regenerate with: make lock"; .lock-venv/bin/uv pip freeze --python .lock-venv/bin/python) > requirements.txt
	@rm -rf .lock-venv

compose-config:       ## validate docker-compose.yaml (works with the Docker client alone)
	@docker compose -f docker-compose.yaml config -q
