# The two commands of the README are `make run` and `make test`; the rest are building blocks.
SHELL := /bin/bash
PY := .venv/bin/python
PYTEST_ARGS ?=
# Two pytest-xdist workers share the one stack (the machine has two cores; half the suite's time is
# waiting on the backends, Airflow and JVM start-up). TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= 2

.PHONY: bootstrap run stop status logs test unit integration lint lock compose-config

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

test: bootstrap       ## the whole suite against real services (starts the backends it needs)
	@$(PY) -m ruff check .
	@$(PY) -m include.stack up --profile backends
	@# The tests marked exclusive stop a shared backend: they run after the parallel pass, alone.
	@# Both passes run whatever the first one's outcome; the target fails if either did (5: none selected).
	@if [[ "$(TEST_WORKERS)" == 0 ]]; then $(PY) -m pytest $(PYTEST_ARGS); exit; fi; \
	 $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "not exclusive" $(PYTEST_ARGS); \
	 parallel=$$?; if [[ $$parallel == 5 ]]; then parallel=0; fi; \
	 $(PY) -m pytest -m exclusive $(PYTEST_ARGS); alone=$$?; if [[ $$alone == 5 ]]; then alone=0; fi; \
	 exit $$(( parallel || alone ))

unit: bootstrap       ## unit tests only: no servers
	@$(PY) -m pytest tests/unit $(PYTEST_ARGS)

lint:
	@$(PY) -m ruff check .

lock:                 ## re-resolve requirements.txt from requirements.in (deliberate upgrades only)
	@rm -rf .lock-venv && python3.11 -m venv .lock-venv && .lock-venv/bin/pip install -q uv==0.9.5
	@.lock-venv/bin/uv pip install -q --python .lock-venv/bin/python -r requirements.in
	@(echo "# Lock of requirements.in for Python 3.11 (Airflow's constraints file is not reachable: this is ours)."; \
	  echo "# Regenerate with: make lock"; .lock-venv/bin/uv pip freeze --python .lock-venv/bin/python) > requirements.txt
	@rm -rf .lock-venv

compose-config:       ## validate docker-compose.yaml (works with the Docker client alone)
	@docker compose -f docker-compose.yaml config -q
