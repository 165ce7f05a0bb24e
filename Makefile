VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Every venv is installed by uv from a lock committed here, never from whatever the
# registry serves today (docs/architecture/decisions/0008-locked-installs.md): uv.lock for
# the project, tests/e2e/litellm-requirements.txt for the LiteLLM proxy. uv itself comes
# from requirements/uv.txt, by its hashes, into a venv of its own.
UV_VENV := .venv-uv
UV := $(UV_VENV)/bin/uv
# The venvs use the python3 on PATH; uv downloads no interpreter of its own.
export UV_PYTHON := python3
export UV_PYTHON_DOWNLOADS := never
# Every venv's packages compiled as they install (uv compiles none unless asked). On a
# machine that sets PYTHONDONTWRITEBYTECODE, as this one and many CI images do, nothing
# compiled would otherwise be compiled again by every process: `import claude_agent_sdk`
# took 2.0 s of CPU uncompiled and 1.0 s compiled, in each `claudeloop run` and each
# process of the tests.
export UV_COMPILE_BYTECODE := 1
# A real LiteLLM proxy for tests/e2e/test_litellm_proxy.py, in a venv of its own (below).
# Set before the rules that name it: make expands a rule's prerequisites as it reads it.
LITELLM_VENV := .venv-litellm
LITELLM_RANGE := tests/e2e/litellm-requirements.in
LITELLM_LOCK := tests/e2e/litellm-requirements.txt
LITELLM_STAMP := $(LITELLM_VENV)/.installed

.PHONY: test check gates lint typecheck contracts pytest install packages browser sandbox litellm bench crash-fuzz rehearse docs clean lock lock-upgrade canary

# Two jobs: the LiteLLM proxy's venv (minutes, mostly downloads) installs beside the
# project's venv and the lint and type checks. (Made beside the tests themselves, its
# install took their CPU: the whole run was two minutes longer on two cores.)
test:
	$(MAKE) -j2 gates

gates: $(LITELLM_STAMP) $(STAMP) lint typecheck contracts pytest

# The fast gate while working (under 45 s on 2 cores): lint, formatting, types,
# import contracts and every test but the end-to-end ones (tests/e2e and tests/contract
# start the real Claude Code CLI; those marked slow take seconds in real processes),
# with at most 20 examples per Hypothesis property (tests/examples.py). Four processes
# on two cores: a fifth of the tests' time is waits (PostgreSQL's notices, processes that
# end, the gateway's watchdog), which the processes beyond two fill. As in CI, each
# starts with the slowest of its share (tests/slowest.txt) and steals from the others
# once its own runs out. Measured on this machine idle, alternating, the pytest run's
# mean: 45.0 s with two processes, 39.9 s with three, 36.6 s with four, 41.9 s with
# five. CI: `make test`.
check: $(STAMP) lint typecheck contracts
	@# PYTHONDONTWRITEBYTECODE emptied for the tests: pytest keeps each test module with
	@# its asserts rewritten in __pycache__ and reads it back next time; with it set (this
	@# machine sets it) each worker rewrites all 170 modules at every start, 8 s of CPU.
	PYTHONDONTWRITEBYTECODE= HYPOTHESIS_PROFILE=check $(VENV)/bin/pytest -n 4 --dist worksteal \
		-q -m "not slow" \
		--ignore=tests/e2e --ignore=tests/contract tests

$(UV): requirements/uv.txt
	python3 -m venv $(UV_VENV)
	$(UV_VENV)/bin/python -m pip install --quiet --require-hashes -r requirements/uv.txt
	touch $(UV)

# Exactly what uv.lock says (--locked: a pyproject.toml the lock no longer matches is an
# error, not a new resolution), the project editable, with the dev extra.
$(STAMP): $(UV) pyproject.toml uv.lock
	UV_PROJECT_ENVIRONMENT=$(VENV) $(UV) sync --quiet --locked --extra dev
	@# The editable install leaves src/ uncompiled, and a machine that sets
	@# PYTHONDONTWRITEBYTECODE (this one does) would compile it again in every process
	@# the tests start: a fifth of a second of each `claudeloop` they run.
	$(PY) -m compileall -q src >/dev/null
	touch $(STAMP)

install: $(STAMP) packages

# Debian's packages the tests and the sandbox need, each named by the command it gives:
# chromium and its driver, which the dashboard's browser tests drive through selenium
# (tests/e2e/test_dashboard.py), and bubblewrap and socat, which Claude Code's sandbox and
# claudeloop's own around its checks need on Linux (docs/architecture/threat-model.md).
# Installed with apt-get when it is here and we are root, in one apt-get for all that are
# missing: two at once fail on dpkg's lock (make -j2 once ran the browser's and the
# sandbox's side by side on a fresh machine), and an apt-get of the machine's own (a first
# boot's upgrades) is waited for, not failed on. Without them those tests skip, saying
# why (with CI=true they fail), and shell commands are refused.
BROWSER_PACKAGES := chromium:chromium chromedriver:chromium-driver
SANDBOX_PACKAGES := bwrap:bubblewrap socat:socat
APT_GET := apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends

define debian_packages
	@missing=""; for pair in $(2); do \
		command -v "$${pair%%:*}" >/dev/null || missing="$$missing $${pair#*:}"; \
	done; \
	if [ -z "$$missing" ]; then :; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		$(APT_GET) $$missing || { apt-get -o DPkg::Lock::Timeout=600 update && $(APT_GET) $$missing; }; \
	else \
		echo "make $(1): no apt-get, or not root: install$$missing yourself," \
			"or the tests that need them skip and shell commands are refused"; \
	fi
endef

packages:
	$(call debian_packages,packages,$(BROWSER_PACKAGES) $(SANDBOX_PACKAGES))

browser:
	$(call debian_packages,browser,$(BROWSER_PACKAGES))

sandbox:
	$(call debian_packages,sandbox,$(SANDBOX_PACKAGES))

# The LiteLLM proxy's venv: its proxy extra (~120 packages) pins rich below ours. The
# range is in the .in file, the versions and hashes installed in the .txt compiled from it.
$(LITELLM_STAMP): $(UV) $(LITELLM_LOCK)
	$(UV) venv --quiet --allow-existing $(LITELLM_VENV)
	$(UV) pip sync --quiet --python $(LITELLM_VENV)/bin/python --require-hashes $(LITELLM_LOCK)
	touch $(LITELLM_STAMP)

litellm: $(LITELLM_STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench

typecheck: $(STAMP)
	$(VENV)/bin/mypy

contracts: $(STAMP)
	$(VENV)/bin/lint-imports

# Three test processes on a 2-core machine: the end-to-end tests mostly wait on the CLI,
# the rehearsal API and the compressed windows (the suite used three quarters of two
# cores with two processes), and each process steals work from the others once its own
# runs out, so no long test starts last on an otherwise idle process. The 30 slowest
# tests are listed, so a CI log says where the 12-minute budget goes. PYTHONDONTWRITEBYTECODE
# emptied, as for `check`: each worker keeps its rewritten test modules.
pytest: $(STAMP) $(LITELLM_STAMP) packages
	PYTHONDONTWRITEBYTECODE= $(VENV)/bin/pytest -n 3 --dist worksteal --cov --cov-branch --cov-report=term-missing \
		--cov-fail-under=0 --durations=30 tests
	$(VENV)/bin/coverage report --include='src/claudeloop/domain/*' --fail-under=100

# A complete run against the built-in rehearsal API: no Claude account, no network.
# Its venv holds what a user installs (claudeloop and its runtime dependencies, no dev
# extra): the Quick start's first command sets up no test tooling.
USER_VENV := .venv-user
USER_STAMP := $(USER_VENV)/.installed

$(USER_STAMP): $(UV) pyproject.toml uv.lock
	UV_PROJECT_ENVIRONMENT=$(USER_VENV) $(UV) sync --quiet --locked
	touch $(USER_STAMP)

rehearse: $(USER_STAMP) sandbox
	$(USER_VENV)/bin/claudeloop rehearse

BENCH_STAMP := $(VENV)/.installed-bench

$(BENCH_STAMP): $(STAMP)
	UV_PROJECT_ENVIRONMENT=$(VENV) $(UV) sync --quiet --locked --inexact --extra dev --extra bench
	touch $(BENCH_STAMP)

# Benchmarks print figures and ratios; they never fail the tests. Results: bench/results/.
bench: $(BENCH_STAMP)
	$(PY) -m bench.run_all

# The newest Claude Code and DBOS beside the locked ones: builds .venv-canary (uv.lock's
# versions but the newest claude-agent-sdk, its CLI, and dbos) and .venv-canary-litellm,
# runs the tests that pin what the CLI emits and the fleet's tests with each, reads what
# each binary can emit, and prints what differs (also in bench/results/canary.md). It
# reports; it never fails on a difference.
canary: $(STAMP) $(LITELLM_STAMP)
	$(PY) -m bench.canary

# Runs killed with SIGKILL at every phase and resumed until done; prints what held.
crash-fuzz: $(STAMP)
	$(PY) -m bench.crash_fuzz

# docs/reference/cli.md from the CLI's own --help (tests/docs/test_cli_reference.py fails when stale)
docs: $(STAMP)
	$(PY) -m claudeloop.cli.reference docs/reference/cli.md

# The locks again after a change of pyproject.toml or of the LiteLLM range, keeping every
# version they can; lock-upgrade takes the newest each range allows. Upgrading the CLI is
# `make canary`, fixing what it shows, then `make lock-upgrade` (docs/guides/upgrading-claude-code.md).
lock: $(UV)
	$(UV) lock --quiet
	$(UV) pip compile --quiet --universal --generate-hashes --python-version 3.11 \
		$(LITELLM_RANGE) -o $(LITELLM_LOCK)

lock-upgrade: $(UV)
	$(UV) lock --quiet --upgrade
	$(UV) pip compile --quiet --universal --generate-hashes --python-version 3.11 --upgrade \
		$(LITELLM_RANGE) -o $(LITELLM_LOCK)

clean:
	rm -rf $(VENV) $(USER_VENV) $(LITELLM_VENV) $(UV_VENV) .venv-canary .venv-canary-litellm .pytest_cache .mypy_cache .ruff_cache .coverage htmlcov
