"""Notifications end to end: a real loop against the rehearsal API sends them, through
apprise's `json://` service, to a small HTTP receiver on 127.0.0.1."""

from __future__ import annotations

import http.cookiejar
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import CREDENTIAL_VARIABLES, FAST_WAITS, Rehearsal, write_plan
from tests.e2e.preloaded import run_claudeloop
from tests.notification_receiver import Receiver, notification_receiver

pytestmark = pytest.mark.e2e

# A guard against a hung run, not a measure: a loaded machine starts each Claude Code
# process slowly, and the runs here start several.
RUN_TIMEOUT = 400


@pytest.fixture
def receiver(rehearsal: Rehearsal) -> Iterator[Receiver]:
    # Loopback only, whatever proxy the machine's environment names.
    rehearsal.env["NO_PROXY"] = rehearsal.env["no_proxy"] = "127.0.0.1,localhost"
    with notification_receiver() as started:
        yield started


def of_kind(receiver: Receiver, words: str) -> list[dict[str, Any]]:
    return [item for item in receiver.received if words in str(item.get("title"))]


@pytest.mark.scenario("window_at_2_credits_at_3")
def test_a_closed_window_credits_out_and_the_end_of_the_run_are_told_once_each_from_the_config(
    rehearsal: Rehearsal, receiver: Receiver
) -> None:
    """The window closes with its reset announced, then the credits run out and two
    probes find them still empty: three notifications, to the config file's URL."""
    (rehearsal.project / "claudeloop.toml").write_text(f'notify = ["{receiver.url("night")}"]\n')
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(
        str(plan), *FAST_WAITS, "--window-probe-interval", "60s", timeout=RUN_TIMEOUT
    )
    assert finished.exit_code == 0, finished.stderr
    window_wait, *credit_waits = [e for e in finished.events() if e["type"] == "wait.started"]
    assert "until" in window_wait["capacity"]  # the rehearsal announced the reset
    assert {e["capacity_kind"] for e in credit_waits} == {"credits"}, credit_waits
    refused = [r for r in rehearsal.requests() if r["kind"] == "probe" and r["gate"] == "credits"]
    assert len(refused) == 2  # two probes found the credits still empty
    assert len(credit_waits) >= 2
    titles = receiver.titles()
    assert len(titles) == 3, titles  # the wait, the credits, then the end: nothing else
    waiting, credits, done = receiver.received
    assert "5-hour window" in waiting["title"]
    # What is awaited, the announced reset, and when the next probe comes.
    assert window_wait["capacity"] in waiting["message"]
    assert "Next probe at" in waiting["message"]
    # Told once however many probes found them empty.
    assert of_kind(receiver, "credits exhausted") == [credits]
    assert "top-up" in credits["message"]
    run_id = finished.result["run_id"]
    assert done["title"].startswith(f"claudeloop: run {run_id} done — 3/3 plan items, $")
    assert done["type"] == "success"
    assert all(item["path"] == "/night" for item in receiver.received)
    assert "notify.failed" not in finished.event_types()


@pytest.mark.scenario("blocked")
def test_a_blocked_run_names_the_blocker_and_how_to_go_on(
    rehearsal: Rehearsal, receiver: Receiver
) -> None:
    rehearsal.env["CLAUDELOOP_NOTIFY"] = receiver.url()
    rehearsal.env["CLAUDELOOP_NOTIFY_ON"] = "blocked,failed"
    finished = rehearsal.run("--prompt", "Write step1.txt", *FAST_WAITS, timeout=RUN_TIMEOUT)
    assert finished.exit_code == 1, finished.stderr
    ((blocked),) = receiver.received
    assert "blocked" in blocked["title"]
    assert "the deploy key for the staging server is missing" in blocked["message"]
    assert f"claudeloop resume {finished.result['run_id']}" in blocked["message"]
    assert blocked["type"] == "warning"


def test_rehearse_sends_its_notifications_to_try_a_setup(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in CREDENTIAL_VARIABLES}
    env.update({"HOME": str(tmp_path), "NO_PROXY": "127.0.0.1,localhost"})
    with notification_receiver() as receiver:
        completed = run_claudeloop(
            ["rehearse", "--notify", receiver.url(), "--json"], env, timeout=RUN_TIMEOUT
        )
    assert completed.returncode == 0, completed.stderr
    run_id = json.loads(completed.stdout)["run_id"]
    waiting, done = receiver.titles()
    assert waiting.startswith(f"claudeloop: run {run_id} waiting — 5-hour window")
    assert done.startswith(f"claudeloop: run {run_id} done — 3/3 plan items, $")


@pytest.mark.scenario("blocked")
def test_a_notification_links_to_the_runs_page_on_the_dashboard_and_never_holds_its_token(
    rehearsal: Rehearsal, receiver: Receiver
) -> None:
    """With `dashboard_url` set to where the dashboard is reached, the notification
    carries the link to the run's page: the page the dashboard serves for that run,
    once signed in. The dashboard's token is in no notification."""
    dashboard = subprocess.Popen(
        [sys.executable, "-m", "claudeloop", "dashboard", "--port", "0"],
        env=rehearsal.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert dashboard.stdout is not None
        sign_in = dashboard.stdout.readline().split(": ", 1)[1].strip()
        base, token = sign_in.split("/?token=", 1)
        rehearsal.env["CLAUDELOOP_NOTIFY"] = receiver.url()
        rehearsal.env["CLAUDELOOP_NOTIFY_ON"] = "blocked"
        rehearsal.env["CLAUDELOOP_DASHBOARD_URL"] = base + "/"
        finished = rehearsal.run("--prompt", "Write step1.txt", *FAST_WAITS, timeout=RUN_TIMEOUT)
        assert finished.exit_code == 1, finished.stderr
        ((blocked),) = receiver.received
        run_id = finished.result["run_id"]
        last = blocked["message"].splitlines()[-1]
        assert last.startswith(f"{base}/run/{run_id}."), blocked["message"]
        assert blocked["click"] is None  # json:// has no click action: the link is in the body
        assert token not in json.dumps(receiver.received)
        # The link is the run's page: the dashboard serves it, once signed in.
        direct = urllib.request.ProxyHandler({})
        opener = urllib.request.build_opener(
            direct, urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        with opener.open(f"{last}?token={token}", timeout=30) as page:
            assert page.url == last  # signed in, the token gone from the address
            text = page.read().decode()
        assert run_id in text
        assert "Write step1.txt" in text or "blocked" in text
    finally:
        dashboard.terminate()
        dashboard.wait(timeout=10)
