"""The dashboard in a hand: at 390 x 844 (a phone), beside the 1400 and 800 px of
tests/e2e/test_dashboard.py, in a real browser. The front page shows what needs a
person first, no page scrolls sideways, every button is big enough for a thumb; a run
on a branch (--worktree) shows its turns' commits, files and diffs with its checks'
verdicts, and its buttons merge it into its base (as `claudeloop merge` does), say a
conflicting merge in words with the base untouched, rewind it to a turn and resume it.
Each new action is refused without the cookie or from another origin.

DASHBOARD_SCREENSHOTS=docs/guides/images keeps the pictures the guide shows
(docs/guides/the-night-from-your-phone.md).
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import test_dashboard
from tests.e2e.conftest import FAST_WAITS, Rehearsal, wait_for
from tests.e2e.test_dashboard import Dashboard, _screenshot, _settled, _whole_page
from tests.e2e.test_worktrees import commits, git, repository

pytestmark = pytest.mark.e2e

browser = test_dashboard.browser  # the fixture: headless chromium

PHONE = (390, 844)
CHECK = "test -f step3.txt"
TAP = 44  # px: the smallest a thumb hits (Apple's and the WCAG's target size)


def _on_a_phone(browser: Any) -> None:
    browser.set_window_size(*PHONE)
    inner = browser.execute_script("return window.innerWidth")
    if inner != PHONE[0]:  # the window's frame, if any, taken out of the inner width
        browser.set_window_size(PHONE[0] + (PHONE[0] - int(inner)), PHONE[1])


def _fits_the_phone(browser: Any) -> None:
    """Nothing past the screen's right edge: no sideways scroll of the page."""
    wide = browser.execute_script("return document.documentElement.scrollWidth")
    past = browser.execute_script(
        "const boxed = (e) => { for (let p = e.parentElement; p; p = p.parentElement)"
        "  if (getComputedStyle(p).overflowX !== 'visible') return true; return false; };"
        "return Array.from(document.querySelectorAll('body *'))"
        ".filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5)"
        ".filter((e) => !boxed(e))"
        ".slice(0, 5).map((e) => e.tagName + '.' + e.getAttribute('class') + ' '"
        "  + Math.round(e.getBoundingClientRect().right));"
    )
    assert wide <= PHONE[0], f"{browser.current_url} is {wide} px wide: {past}"


def _small_tap_targets(browser: Any) -> list[str]:
    """Each shown button, field, choice and header link smaller than a thumb."""
    small: list[str] = browser.execute_script(
        "return Array.from(document.querySelectorAll("
        "  'button, input:not([type=hidden]), select, header a, tr.run td:first-child a,"
        "   a.cancel'))"
        ".filter((e) => e.getClientRects().length > 0)"
        ".map((e) => [e, e.getBoundingClientRect()])"
        f".filter(([e, r]) => r.height < {TAP} || r.width < {TAP})"
        ".map(([e, r]) => (e.textContent || e.name || e.tagName).trim() + ' '"
        "  + Math.round(r.width) + 'x' + Math.round(r.height));"
    )
    return small


def _phone_page(browser: Any, name: str, tmp_path: Path) -> None:
    """The page as a phone shows it: fits, tappable, then its screenshot whole."""
    _fits_the_phone(browser)
    assert _small_tap_targets(browser) == [], browser.current_url
    _whole_page(browser, browser.get_window_size()["width"])
    browser.execute_script("window.scrollTo(0, 0)")
    _screenshot(browser, f"{name}-390", tmp_path)
    _on_a_phone(browser)


def test_the_front_page_a_runs_page_and_the_report_in_a_hand(browser: Any, tmp_path: Path) -> None:
    """Runs that ended every way at 390 px: what needs a person is the first section,
    above everything the other sections show; each page fits the screen and its
    buttons and links are big enough to tap."""
    from selenium.webdriver.common.by import By

    from claudeloop.adapters.run_index import RunIndexDirectory
    from tests.cli.test_one_read_model import SCRIPTS, driven

    env = {**os.environ, "CLAUDELOOP_STATE_DIR": str(tmp_path / "state")}
    index = RunIndexDirectory(tmp_path / "state" / "runs")
    for name in ("done", "auth_failed", "budget_exhausted", "blocked", "refused_then_probed"):
        driven(tmp_path / name, f"20261130-090000-{name.replace('_', '-')}", SCRIPTS[name], index)
    shown = Dashboard(env)
    try:
        browser.get(shown.url)
        _on_a_phone(browser)
        browser.get(shown.base + "/")
        sections = _settled(
            browser, lambda page: page.find_elements(By.CSS_SELECTOR, "#main .section")
        )
        assert sections[0].get_attribute("id") == "needs-you"
        needs_you = browser.find_element(By.ID, "needs-you")
        bottom = needs_you.location["y"] + needs_you.size["height"]
        for section in sections[1:]:
            assert section.location["y"] >= bottom, section.get_attribute("id")
        # Its first run, its state and why read within the first screen, in a card.
        first = needs_you.find_element(By.CSS_SELECTOR, "tr.run")
        assert first.location["y"] + first.size["height"] < PHONE[1]
        assert first.size["width"] <= PHONE[0]
        verdict = first.find_element(By.CSS_SELECTOR, ".phase")
        assert verdict.is_displayed()
        assert verdict.location["x"] + verdict.size["width"] <= PHONE[0]
        _phone_page(browser, "front", tmp_path)

        probed = "20261130-090000-refused-then-probed"
        browser.get(shown.base + f"/run/{probed}")
        _settled(browser, lambda page: page.find_element(By.ID, "live").text == "live")
        assert browser.find_elements(By.CSS_SELECTOR, "ol.events li")
        _phone_page(browser, "run", tmp_path)

        browser.get(shown.base + "/report?since=30d")
        table = _settled(
            browser, lambda page: page.find_element(By.CSS_SELECTOR, "table.report-runs")
        )
        assert probed in table.text
        _phone_page(browser, "report", tmp_path)
    finally:
        shown.close()


def _post(url: str, *, cookie: str | None, origin: str | None) -> int:
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if cookie is not None:
        headers["Cookie"] = cookie
    if origin is not None:
        headers["Origin"] = origin
    asked = urllib.request.Request(url, data=b"to_turn=0", headers=headers, method="POST")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(asked, timeout=30) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as refused:
        return int(refused.code)


def _the_cookie(dashboard: Dashboard) -> str:
    """The cookie the printed URL sets, as a Cookie header."""

    class Keep(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), Keep())
    with pytest.raises(urllib.error.HTTPError) as moved:
        opener.open(dashboard.url, timeout=30)
    assert moved.value.code == 303
    return str(moved.value.headers["set-cookie"]).split(";", 1)[0]


def _yes(browser: Any, action: str, *, picture: Path | None = None) -> str:
    """The confirmation page's words, then its yes pressed; what the run's page says."""
    from selenium.webdriver.common.by import By

    words = _settled(browser, lambda page: page.find_element(By.CSS_SELECTOR, ".confirm-said"))
    said = str(words.text)
    assert _small_tap_targets(browser) == []
    _fits_the_phone(browser)
    if picture is not None:
        _screenshot(browser, f"{action}-confirm-390", picture)
    browser.find_element(By.CSS_SELECTOR, f"button.confirm.{action}").click()
    answer = _settled(browser, lambda page: page.find_element(By.CSS_SELECTOR, "p.said"))
    return said + "\n" + str(answer.text)


@pytest.mark.scenario("three_steps")
def test_a_runs_work_on_a_phone_merged_conflicting_rewound_and_resumed(
    rehearsal: Rehearsal, browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    project = rehearsal.project
    plan = repository(project)
    for run_id in ("p1", "p2"):
        ran = rehearsal.run(
            str(plan),
            *FAST_WAITS,
            "--worktree",
            "--run-id",
            run_id,
            "--verify",
            "test -f step3.txt",
        )
        assert ran.exit_code == 0, ran.stderr
    shown = Dashboard(rehearsal.env)
    try:
        # Every new action, refused without the cookie, from another origin, or with
        # no origin at all; nothing merged, rewound or resumed.
        cookie, head = _the_cookie(shown), git(project, "rev-parse", "HEAD")
        for action in ("merge", "rewind", "resume"):
            url = f"{shown.base}/run/p1/do-branch/{action}"
            assert _post(url, cookie=None, origin=shown.base) == 403, action
            assert _post(url, cookie=cookie, origin="http://elsewhere.example") == 403, action
            assert _post(url, cookie=cookie, origin=None) == 403, action
        assert git(project, "rev-parse", "HEAD") == head
        assert len(commits(project, "claudeloop/p1")) == 3

        browser.get(shown.url)
        _on_a_phone(browser)
        browser.get(shown.base + "/run/p1")
        turns = _settled(
            browser, lambda page: page.find_elements(By.CSS_SELECTOR, "#work .turn-work")
        )
        assert [t.get_attribute("data-turn") for t in turns] == ["3", "2", "1"]  # newest first
        last = turns[0]
        assert "step3.txt" in last.find_element(By.CSS_SELECTOR, "pre.files").text
        diff = last.find_element(By.CSS_SELECTOR, "pre.diff")
        assert "+step 3" in diff.text
        assert diff.location["x"] + diff.size["width"] <= PHONE[0]  # in its own box
        verdict = last.find_element(By.CSS_SELECTOR, ".verdict")
        assert verdict.text == "passed: test -f step3.txt"
        _phone_page(browser, "run-work", tmp_path)

        # Merge: what will happen said first, then done, as `claudeloop merge` does it.
        browser.find_element(By.CSS_SELECTOR, "button.merge").click()
        said = _yes(browser, "merge", picture=tmp_path)
        assert "Merge claudeloop/p1 into main: the commits of turns 1, 2, 3" in said
        assert "merged claudeloop/p1 into main" in said
        assert (project / "step3.txt").read_text() == "step 3\n"
        assert git(project, "merge-base", "--is-ancestor", "claudeloop/p1", "main") == ""
        assert git(project, "log", "-1", "--format=%s", "main").strip() == "Merge claudeloop/p1"
        assert len(git(project, "log", "-1", "--format=%P", "main").split()) == 2
        _phone_page(browser, "merged", tmp_path)

        # Main moves on where p2 wrote too: its merge conflicts, said in words, with
        # the command that resolves it, and main is as it was.
        (project / "step1.txt").write_text("step 1, as main has it now\n")
        git(project, "commit", "-qam", "main's own step 1")
        head = git(project, "rev-parse", "HEAD")
        browser.get(shown.base + "/run/p2")
        _settled(browser, lambda page: page.find_element(By.CSS_SELECTOR, "button.merge")).click()
        said = _yes(browser, "merge")
        assert "does not merge cleanly into main" in said
        assert "step1.txt" in said
        assert "Nothing was merged; main is as it was" in said
        assert "claudeloop merge p2 --resolve" in said
        assert git(project, "rev-parse", "HEAD") == head
        assert git(project, "status", "--porcelain", "--untracked-files=no") == ""
        assert not (project / ".git" / "MERGE_HEAD").exists()
        _phone_page(browser, "merge-conflict", tmp_path)

        # Rewind p2 to turn 1: the turns it drops named before, then gone.
        from selenium.webdriver.support.ui import Select

        Select(browser.find_element(By.CSS_SELECTOR, "form.rewind select")).select_by_value("1")
        browser.find_element(By.CSS_SELECTOR, "button.rewind").click()
        said = _yes(browser, "rewind")
        assert "the commits of turns 2, 3 are dropped" in said
        assert "rewound to turn 1" in said
        assert [turn for _, _, turn in commits(project, "claudeloop/p2")] == ["1"]
        events = (project / ".claudeloop" / "runs" / "p2" / "events.jsonl").read_text()
        assert '"branch.rewound"' in events

        # Resume: `claudeloop resume` in the background, as the command does it. Run p2
        # was done: resumed, it says so again at once (the rewind told its record).
        browser.find_element(By.CSS_SELECTOR, "button.resume").click()
        said = _yes(browser, "resume")
        assert "`claudeloop resume p2`" in said
        assert "resumed run p2" in said, said

        def finished() -> list[str]:
            lines = (project / ".claudeloop" / "runs" / "p2" / "events.jsonl").read_text()
            return [json.loads(line)["type"] for line in lines.splitlines()]

        wait_for(lambda: finished().count("run.finished") == 2, "the resumed run to end")
        types = finished()
        assert types[types.index("branch.rewound") :][-1] == "run.finished"

        browser.get(shown.base + "/accounts")
        _settled(browser, lambda page: page.find_element(By.TAG_NAME, "h1"))
        _phone_page(browser, "accounts", tmp_path)
    finally:
        shown.close()
    assert shutil.which("git")


@pytest.mark.scenario("windows_at_2_and_3_until_lift")
def test_a_live_runs_buttons_in_a_hand_and_its_stop_ends_it(
    rehearsal: Rehearsal, browser: Any, tmp_path: Path
) -> None:
    """A run waiting on its window, at 390 px: its buttons and forms fit the screen, each
    big enough to tap, and its stop button ends it."""
    from selenium.webdriver.common.by import By

    from tests.e2e.conftest import write_plan
    from tests.e2e.test_dashboard import _phase, _state

    plan = write_plan(rehearsal.project)
    process = rehearsal.start(
        "run", str(plan), *FAST_WAITS, "--window-probe-interval", "1h", "--max-wait", "10h"
    )
    shown = Dashboard(rehearsal.env)
    try:
        wait_for(lambda: _phase(rehearsal.project) == "waiting", "the run to wait")
        run_id = str((_state(rehearsal.project) or {})["run_id"])
        browser.get(shown.url)
        _on_a_phone(browser)
        browser.get(f"{shown.base}/run/{run_id}")
        _settled(browser, lambda page: page.find_element(By.ID, "live").text == "live")
        for name in ("stop", "wind-down", "probe-now", "raise", "note"):
            button = browser.find_element(By.CSS_SELECTOR, f"button.{name}")
            assert button.location["x"] + button.size["width"] <= PHONE[0], name
        _phone_page(browser, "live-run", tmp_path)
        _settled(
            browser, lambda page: page.find_element(By.CSS_SELECTOR, "button.stop").click() or True
        )
        _settled(browser, lambda page: "asked run" in page.find_element(By.ID, "main").text)
        out, err = process.communicate(timeout=60)
    finally:
        shown.close()
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    assert process.returncode == 130, err
    assert json.loads(out)["outcome"] == "stopped"
