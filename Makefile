VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# A real LiteLLM proxy for tests/e2e/test_litellm_proxy.py, in a venv of its own (below).
# Set before the rules that name it: make expands a rule's prerequisites as it reads it.
LITELLM_VENV := .venv-litellm
LITELLM_REQUIREMENTS := tests/e2e/litellm-requirements.txt
LITELLM_STAMP := $(LITELLM_VENV)/.installed

.PHONY: test check gates lint typecheck contracts pytest install browser litellm bench crash-fuzz rehearse docs clean

# Two jobs: the LiteLLM proxy's venv (minutes, mostly downloads) installs beside the
# project's venv and the lint and type checks. (Made beside the tests themselves, its
# install took their CPU: the whole run was two minutes longer on two cores.)
test:
	$(MAKE) -j2 gates

gates: $(LITELLM_STAMP) $(STAMP) lint typecheck contracts pytest

# The fast gate while working (under a minute on 2 cores): lint, formatting, types,
# import contracts and every test but the end-to-end ones (tests/e2e and tests/contract
# start the real Claude Code CLI; those marked slow take seconds in real processes),
# with at most 20 examples per Hypothesis property (tests/examples.py). CI: `make test`.
check: $(STAMP) lint typecheck contracts
	HYPOTHESIS_PROFILE=check $(VENV)/bin/pytest -n 2 -q -m "not slow" \
		--ignore=tests/e2e --ignore=tests/contract tests

$(VENV)/bin/python:
	python3 -m venv $(VENV)

$(STAMP): $(VENV)/bin/python pyproject.toml
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	@# The editable install leaves src/ uncompiled, and a machine that sets
	@# PYTHONDONTWRITEBYTECODE (this one does) would compile it again in every process
	@# the tests start: a fifth of a second of each `claudeloop` they run.
	$(PY) -m compileall -q src >/dev/null
	touch $(STAMP)

install: $(STAMP) browser

# Debian's chromium and its driver, which the dashboard's browser tests drive through
# selenium (tests/e2e/test_dashboard.py): installed when apt-get is here and we are
# root; else those tests skip, saying why (with CI=true they fail instead).
BROWSER_PACKAGES := chromium chromium-driver

browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		apt-get install -y --no-install-recommends $(BROWSER_PACKAGES) \
		|| { apt-get update && apt-get install -y --no-install-recommends $(BROWSER_PACKAGES); }; \
	else \
		echo "make browser: no apt-get, or not root: install $(BROWSER_PACKAGES) yourself," \
			"or the dashboard's browser tests skip"; \
	fi

# The LiteLLM proxy's venv: its proxy extra (~120 packages) pins rich below ours, and the
# range is in the requirements file.
$(LITELLM_STAMP): $(LITELLM_REQUIREMENTS)
	python3 -m venv $(LITELLM_VENV)
	$(LITELLM_VENV)/bin/python -m pip install --quiet -r $(LITELLM_REQUIREMENTS)
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
# tests are listed, so a CI log says where the 20-minute budget goes.
pytest: $(STAMP) $(LITELLM_STAMP) browser
	$(VENV)/bin/pytest -n 3 --dist worksteal --cov --cov-branch --cov-report=term-missing \
		--cov-fail-under=0 --durations=30 tests
	$(VENV)/bin/coverage report --include='src/claudeloop/domain/*' --fail-under=100

# A complete run against the built-in rehearsal API: no Claude account, no network.
# Its venv holds what a user installs (claudeloop and its runtime dependencies, no dev
# extra): the Quick start's first command sets up no test tooling.
USER_VENV := .venv-user
USER_STAMP := $(USER_VENV)/.installed

$(USER_STAMP): pyproject.toml
	python3 -m venv $(USER_VENV)
	$(USER_VENV)/bin/python -m pip install --quiet -e .
	touch $(USER_STAMP)

rehearse: $(USER_STAMP)
	$(USER_VENV)/bin/claudeloop rehearse

BENCH_STAMP := $(VENV)/.installed-bench

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e ".[dev,bench]"
	touch $(BENCH_STAMP)

# Benchmarks print figures and ratios; they never fail the tests. Results: bench/results/.
bench: $(BENCH_STAMP)
	$(PY) -m bench.run_all

# Runs killed with SIGKILL at every phase and resumed until done; prints what held.
crash-fuzz: $(STAMP)
	$(PY) -m bench.crash_fuzz

# docs/reference/cli.md from the CLI's own --help (tests/docs/test_cli_reference.py fails when stale)
docs: $(STAMP)
	$(PY) -m claudeloop.cli.reference docs/reference/cli.md

clean:
	rm -rf $(VENV) $(USER_VENV) $(LITELLM_VENV) .pytest_cache .mypy_cache .ruff_cache .coverage htmlcov
