# cloudcore: the two commands are `make run` and `make test` (see README.md).
SHELL := /bin/bash
PY := .venv/bin/python
PIP := .venv/bin/pip
# iptables brings ebtables too: libvirt's nwfilter driver enforces security groups on guest NICs with them
APT_PACKAGES := libvirt-dev pkg-config postgresql redis-server libvirt-daemon gcc python3-dev chromium novnc \
	qemu-system-x86 qemu-utils libvirt-daemon-system busybox-static linux-image-cloud-amd64 iptables
PGPORT ?= 55432
REDIS_PORT ?= 56379
PG_URL := postgres://postgres@127.0.0.1:$(PGPORT)
export PGPORT REDIS_PORT

.PHONY: run test test-sqlite test-postgres test-e2e-postgres lint system-packages venv services-up services-down clean bench

# --- setup ------------------------------------------------------------------------------------
system-packages:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

.venv/.requirements-stamp: requirements.txt
	@$(MAKE) --no-print-directory system-packages
	@test -x $(PY) || python3 -m venv .venv
	@$(PIP) install -q --disable-pip-version-check -r requirements.txt
	@$(PY) scripts/fetch_ansible_collection.py
	@touch $@

venv: .venv/.requirements-stamp

# --- the two commands ---------------------------------------------------------------------------
run: venv
	$(PY) manage.py run_cloud

test: venv
	@set -o pipefail; status=0; \
	$(MAKE) --no-print-directory lint || status=1; \
	$(MAKE) --no-print-directory test-sqlite || status=1; \
	$(MAKE) --no-print-directory test-postgres || status=1; \
	$(MAKE) --no-print-directory test-e2e-postgres || status=1; \
	exit $$status

# ruff, then the import contracts (pyproject.toml [tool.importlinter]), then strict mypy on the
# kernel, cells and every services/selectors/rpc module (pyproject.toml [tool.mypy]).
lint: venv
	.venv/bin/ruff check .
	.venv/bin/lint-imports
	.venv/bin/mypy

# The in-process tiers two at a time (pytest-xdist: a worker per core, each with its own test
# databases), then the real-process tests (live clouds, workers, browsers) two modules at a time,
# each module on one worker (its module fixtures, a cloud, made once; the real guests take turns on
# the machine's libvirtd, tests/e2e/test_real_guest.py's system_libvirt): 24-26 minutes here for what
# took 42 one at a time. (xdist's loadgroup would pair modules by marks, but it renames node ids through an
# attribute pytest 9 no longer reads.) --durations: every CI log says where the time goes.
test-sqlite: venv
	@set -o pipefail; status=0; \
	$(PY) -m pytest tests -q -m "not slow" -n 2 --durations=25 || status=1; \
	$(PY) -m pytest tests -q -m slow -n 2 --dist loadfile --durations=40 || status=1; \
	exit $$status

# The database-layer tests again on PostgreSQL, one real database per cell (two at a time: each
# xdist worker gets its own test databases, pytest-django's _gw<N> suffix).
test-postgres: venv
	@scripts/services.sh start postgres
	@set -o pipefail; \
	CLOUDCORE_DATABASE_URL=$(PG_URL)/cloudcore \
	CLOUDCORE_CELL_DATABASES=cell0=$(PG_URL)/cloudcore_cell0,cell1=$(PG_URL)/cloudcore_cell1,cell2=$(PG_URL)/cloudcore_cell2 \
	$(PY) -m pytest tests/unit tests/functional -q -m "not slow" -p no:randomly -n 2 --durations=25; \
	status=$$?; scripts/services.sh stop postgres; exit $$status

# The whole live cloud (manage.py run_cloud, every process) on PostgreSQL (API + one database per
# cell, fresh names each run) with Redis as the Celery broker, driven with the openstack CLI; then,
# in a pytest run of its own (its own cloud), the fault suite: kill -9 of a compute worker, the
# conductor, Redis and a cell database in the middle of builds and resizes (tests/e2e/test_faults.py).
# The volume CLI and SDK suites and the concurrency race run again on this cloud (they ran on SQLite in
# test-sqlite); the CLI suite (test_cli_cloud.py) runs once here, on a second cloud whose compute workers
# (isolated, CLOUDCORE_COMPUTE_ISOLATION, on by default as on the first) connect as a role per cell that
# reaches only that cell's database (test_isolated_computes.py collects it): on the first cloud it would
# repeat the same flow with the computes' database user the only difference.
# Redis is restarted empty before the fault suite so that no task of the first cloud reaches the second.
E2E_ON_POSTGRES := tests/e2e/test_cli_volumes.py tests/e2e/test_sdk.py \
	tests/hardening/test_concurrent_actions.py tests/e2e/test_isolated_computes.py
test-e2e-postgres: venv
	@set -o pipefail; status=0; \
	trap 'scripts/services.sh stop redis; scripts/services.sh stop postgres' EXIT; \
	scripts/services.sh start postgres && scripts/services.sh start redis || exit 1; \
	CLOUDCORE_E2E_DATABASE_URL=$(PG_URL)/cloudcore_e2e \
	CLOUDCORE_E2E_BROKER_URL=redis://127.0.0.1:$(REDIS_PORT)/0 \
	$(PY) -m pytest tests/e2e/test_cli_postgres.py $(E2E_ON_POSTGRES) -q -p no:randomly --durations=25 || status=1; \
	scripts/services.sh stop redis && scripts/services.sh start redis || exit 1; \
	CLOUDCORE_E2E_DATABASE_URL=$(PG_URL)/cloudcore_e2e \
	CLOUDCORE_E2E_BROKER_URL=redis://127.0.0.1:$(REDIS_PORT)/0 \
	$(PY) -m pytest tests/e2e/test_faults.py -q -p no:randomly --durations=10 || status=1; \
	exit $$status

# The benchmarks (bench/out/report.md); the live_load scenario's second pass runs the cloud on
# PostgreSQL + Redis (issue 23: "and again on PostgreSQL + Redis"), started and stopped here as for
# test-e2e-postgres.
bench: venv
	@set -o pipefail; \
	trap 'scripts/services.sh stop redis; scripts/services.sh stop postgres' EXIT; \
	scripts/services.sh start postgres && scripts/services.sh start redis || exit 1; \
	CLOUDCORE_E2E_DATABASE_URL=$(PG_URL)/cloudcore_e2e \
	CLOUDCORE_E2E_BROKER_URL=redis://127.0.0.1:$(REDIS_PORT)/0 \
	$(PY) -m bench $(BENCH_ARGS)

clean:
	rm -rf var .pytest_cache
