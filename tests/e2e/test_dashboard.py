"""The dashboard in a real browser (Debian's chromium, headless, through selenium and
chromium-driver) beside a real run against the rehearsal API: the list shows the run,
its page follows its events live, its stop button ends it, its probe-now button ends a
wait, and a request without the token is refused.

Where chromium or its driver is missing the tests skip, saying how to install them
(`make browser`); with CI=true a missing browser fails them instead. With
DASHBOARD_SCREENSHOTS=DIR each page's screenshot is also saved into DIR (the guide's
pictures: `DASHBOARD_SCREENSHOTS=docs/guides/images pytest tests/e2e/test_dashboard.py`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import FAST_WAITS, Rehearsal, wait_for, write_plan

pytestmark = pytest.mark.e2e

CHROMIUM = ("chromium", "chromium-browser")
DRIVER = "chromedriver"


def _missing(why: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI runs the browser tests: {why}")
    pytest.skip(why)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    """Headless chromium, driven by Debian's chromium-driver (never a downloaded one)."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _missing("selenium is not installed (the dev extra: pip install -e '.[dev]')")
    chromium = next((found for name in CHROMIUM if (found := shutil.which(name))), None)
    driver = shutil.which(DRIVER)
    if chromium is None or driver is None:
        _missing(
            "chromium and chromium-driver are not installed: `make browser` installs them "
            "as root with apt-get (apt-get install -y chromium chromium-driver)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = str(chromium)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,1000",
        f"--user-data-dir={tmp_path / 'chromium'}",
    ):
        options.add_argument(argument)
    session = webdriver.Chrome(service=Service(executable_path=str(driver)), options=options)
    try:
        yield session
    finally:
        session.quit()


class Dashboard:
    """`claudeloop dashboard` in the background, and the URL it printed."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "claudeloop", "dashboard", "--port", "0"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        first = self.process.stdout.readline()
        assert first.startswith("claudeloop dashboard: http://127.0.0.1:"), (
            first + self.process.stderr.read()
            if self.process.poll() is not None and self.process.stderr
            else first
        )
        self.url = first.split(": ", 1)[1].strip()
        self.base = self.url.split("/?", 1)[0]

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture
def dashboard(rehearsal: Rehearsal) -> Iterator[Dashboard]:
    shown = Dashboard(rehearsal.env)
    try:
        yield shown
    finally:
        shown.close()


def _state(project: Path) -> dict[str, Any] | None:
    runs = project / ".claudeloop" / "runs"
    for run in runs.iterdir() if runs.is_dir() else ():
        try:
            return dict(json.loads((run / "state.json").read_text()))
        except (OSError, ValueError):
            return None
    return None


def _events(project: Path) -> list[dict[str, Any]]:
    (run,) = list((project / ".claudeloop" / "runs").iterdir())
    lines = (run / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _settled(browser: Any, condition: Any, message: str = "", timeout: float = 60) -> Any:
    """`condition(browser)` once it holds; the page redraws its main part as events
    come, so an element found a moment ago may be gone: looked up again."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, timeout, ignored_exceptions=[StaleElementReferenceException])
    return wait.until(condition, message)


def _screenshot(browser: Any, name: str, tmp_path: Path) -> None:
    path = tmp_path / f"dashboard-{name}.png"
    browser.save_screenshot(str(path))
    keep = os.environ.get("DASHBOARD_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(keep) / path.name)


def _whole_page(browser: Any, width: int) -> None:
    """The window as tall as the page (up to 3000 px): its screenshot shows all of it."""
    tall = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(width, min(int(tall) + 140, 3000))


def _shown_text_sizes(browser: Any) -> list[float]:
    """The size, in px on the screen, of each word the page's pictures show: its font
    size times the scale its picture is drawn at."""
    sizes: list[float] = browser.execute_script(
        "return Array.from(document.querySelectorAll('svg text'))"
        ".filter((t) => t.getClientRects().length > 0)"
        ".map((t) => parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a);"
    )
    assert sizes, "no picture's words shown"
    return sizes


def _overlapping_legends(browser: Any) -> list[str]:
    """The words of each two entries of a picture's legend that meet on the screen."""
    met: list[str] = browser.execute_script(
        "const met = [];"
        "for (const svg of document.querySelectorAll('svg')) {"
        "  const boxes = Array.from(svg.querySelectorAll('g.legend'))"
        "    .filter((g) => g.getClientRects().length > 0)"
        "    .map((g) => [g.textContent, g.getBoundingClientRect()]);"
        "  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {"
        "    const [a, p] = boxes[i], [b, q] = boxes[j];"
        "    if (p.left < q.right && q.left < p.right && p.top < q.bottom && q.top < p.bottom)"
        "      met.push(a + ' / ' + b);"
        "  }"
        "}"
        "return met;"
    )
    return met


def _phase(project: Path) -> str | None:
    phase = (_state(project) or {}).get("state", {}).get("phase")
    return None if phase is None else str(phase)


def _waits(project: Path) -> int:
    runs = project / ".claudeloop" / "runs"
    return sum(e["type"] == "wait.started" for e in _events(project)) if runs.is_dir() else 0


@pytest.mark.scenario("windows_at_2_and_3_until_lift")
def test_the_list_shows_a_waiting_run_its_page_follows_it_probe_now_ends_the_wait_and_stop_ends_it(
    rehearsal: Rehearsal, dashboard: Dashboard, browser: Any, tmp_path: Path
) -> None:
    """One run on the dashboard: a request without the token is refused; the list shows
    the run waiting on its 5-hour window, the run's page follows it live, probe-now
    ends the five-hour wait (the window reopened) and the run goes on, and when it waits
    again, on a window that announces no reset, the stop button ends it."""
    from selenium.webdriver.common.by import By

    direct = urllib.request.ProxyHandler({})  # 127.0.0.1 itself, whatever the proxy
    for path in ("/", "/accounts", "/stream", "/static/dashboard.js", "/?token=wrong"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.build_opener(direct).open(dashboard.base + path, timeout=30)
        assert refused.value.code == 403, path
    # The printed URL sets the cookie, and the page it sends on to is let through.
    opener = urllib.request.build_opener(direct, urllib.request.HTTPCookieProcessor())
    with opener.open(dashboard.url, timeout=30) as answer:
        assert answer.status == 200
        assert answer.url == dashboard.base + "/"

    plan = write_plan(rehearsal.project)
    # The next probe an hour away, the reset five: only the button ends the first wait,
    # and the page shows the run waiting however slowly it is read.
    process = rehearsal.start(
        "run", str(plan), *FAST_WAITS, "--window-probe-interval", "1h", "--max-wait", "10h"
    )
    try:
        wait_for(lambda: _phase(rehearsal.project) == "waiting", "the run to wait")
        run_id = str((_state(rehearsal.project) or {})["run_id"])

        browser.get(dashboard.url)  # the token, then the cookie
        row = _settled(
            browser,
            lambda page: (
                "5-hour window closed"
                in (text := page.find_element(By.CSS_SELECTOR, "tr.run").text)
                and text
            ),
        )
        assert run_id in row
        assert "waiting" in row
        # In the front page's part of the runs that wait, saying until when.
        waiting = browser.find_element(By.CSS_SELECTOR, "#waiting tr.run").text
        assert run_id in waiting
        assert "next probe" in waiting
        assert "token" not in browser.current_url  # the token left the address bar
        _screenshot(browser, "runs", tmp_path)

        _settled(browser, lambda page: page.find_element(By.LINK_TEXT, run_id).click() or True)
        _settled(browser, lambda page: page.find_element(By.ID, "live").text == "live")
        assert browser.find_elements(By.CSS_SELECTOR, "svg.timeline rect.wait")
        for width in (1400, 800):
            browser.set_window_size(width, 1000)
            for name, labels in (
                ("raise", ["Most turns", "Most dollars", "Longest wait"]),
                ("note", ["A note for the next turn"]),
            ):
                form = _settled(
                    browser, lambda page, n=name: page.find_element(By.CSS_SELECTOR, f"form.{n}")
                )
                said = [label.text for label in form.find_elements(By.CSS_SELECTOR, "label span")]
                assert said == labels
                # Each form on one line: its button beside its last field, not under it.
                field = form.find_elements(By.TAG_NAME, "input")[-1]
                button = form.find_element(By.TAG_NAME, "button")
                assert button.location["x"] > field.location["x"], f"{name} wraps at {width}"
                assert (
                    abs(
                        button.rect["y"]
                        + button.rect["height"]
                        - field.rect["y"]
                        - field.rect["height"]
                    )
                    < 8
                )
            _screenshot(browser, f"live-run-{width}", tmp_path)
        browser.set_window_size(1280, 1000)

        browser.get(dashboard.base + "/accounts")
        _settled(
            browser, lambda page: "runs waiting on it" in page.find_element(By.ID, "main").text
        )
        assert run_id in browser.find_element(By.ID, "main").text
        _screenshot(browser, "accounts", tmp_path)

        browser.back()
        rehearsal.server.lift()  # capacity is back, and the person at the page knows it
        _settled(
            browser,
            lambda page: page.find_element(By.CSS_SELECTOR, "button.probe-now").click() or True,
        )
        _settled(browser, lambda page: "probe now" in page.find_element(By.ID, "main").text)
        _settled(browser, lambda page: page.find_element(By.ID, "live").text == "live")
        shown = len(_events(rehearsal.project))
        # The next event the run writes reaches the open page, without a reload: the
        # page has no timer that reloads it, only its stream of events.
        wait_for(lambda: len(_events(rehearsal.project)) > shown, "the run's next event")
        following = _events(rehearsal.project)[shown]
        _settled(
            browser,
            lambda page: any(
                item.get_attribute("data-ts") == following["ts"]
                for item in page.find_elements(By.CSS_SELECTOR, "ol.events li")
            ),
            f"{following['type']} at {following['ts']} on the page, by its stream",
            timeout=60,
        )

        # Turn 2 answered, turn 3 meets the window again: no reset, the next probe an
        # hour away, and the stop button ends the run.
        wait_for(
            lambda: _waits(rehearsal.project) == 2 and _phase(rehearsal.project) == "waiting",
            "the run to wait again",
            timeout=120,
        )
        _settled(
            browser, lambda page: page.find_element(By.CSS_SELECTOR, "button.stop").click() or True
        )
        _settled(browser, lambda page: "asked run" in page.find_element(By.ID, "main").text)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    assert process.returncode == 130, err
    assert json.loads(out)["outcome"] == "stopped"
    events = _events(rehearsal.project)
    types = [event["type"] for event in events]
    assert types.count("wait.started") == 2
    first_wait = types.index("wait.started")
    assert first_wait < types.index("probe.asked") < types.index("probe.finished")
    probes = [r for r in rehearsal.requests() if r["kind"] == "probe"]
    assert len(probes) == 1  # the one the button asked for, not one at the reset
    # The button's probe found the window open, and the run went on: the next turn was
    # answered before the window closed again.
    probed = types.index("probe.finished")
    assert events[probed]["capacity_kind"] == "available"
    after = [e for e in events[probed:] if e["type"] == "turn.finished"]
    assert after[0]["verdict"] != "refused", after
    assert probed < types.index("wait.started", first_wait + 1)


def test_the_front_page_a_runs_page_and_the_report_read_at_both_widths(
    browser: Any, tmp_path: Path
) -> None:
    """Runs a driven script made, each set in a state directory and a dashboard of its
    own, read in one browser."""
    for each in ("front", "run-page"):
        (tmp_path / each).mkdir()
    _the_front_page_reads_in_ten_seconds_at_both_widths(browser, tmp_path / "front")
    _a_runs_page_and_the_report_read_at_both_widths(browser, tmp_path / "run-page")


def _the_front_page_reads_in_ten_seconds_at_both_widths(browser: Any, tmp_path: Path) -> None:
    """Runs that ended every way, and one whose directory is gone, on the front page: what
    needs a person first and red, then what is done, then what ended and can go on, and
    the gone run folded and grey at the end; the same at 1400 and 800 px wide."""
    from selenium.webdriver.common.by import By

    from claudeloop.adapters.run_index import RunIndexDirectory
    from tests.cli.test_one_read_model import SCRIPTS, driven

    env = {**os.environ, "CLAUDELOOP_STATE_DIR": str(tmp_path / "state")}
    index = RunIndexDirectory(tmp_path / "state" / "runs")
    for name in ("done", "auth_failed", "budget_exhausted", "blocked", "refused_then_probed"):
        driven(tmp_path / name, f"20261130-090000-{name.replace('_', '-')}", SCRIPTS[name], index)
    driven(tmp_path / "removed", "20261130-090000-removed", SCRIPTS["done"], index)
    shutil.rmtree(tmp_path / "removed")
    # A rehearsal kept with --keep that failed: a tryout, not a run that needs a person.
    rehearsed = "20261130-090000-rehearsal"
    driven(tmp_path / "rehearsal", rehearsed, SCRIPTS["auth_failed"], index, profile="rehearsal")
    shown = Dashboard(env)
    try:
        browser.get(shown.url)
        for width in (1400, 800):
            browser.set_window_size(width, 1000)
            browser.get(shown.base + "/")
            sections = _settled(
                browser, lambda page: page.find_elements(By.CSS_SELECTOR, "#main .section")
            )
            names = [section.get_attribute("id") for section in sections]
            assert names == ["needs-you", "done", "ended", "rehearsals", "gone"]
            tops = [section.location["y"] for section in sections]
            assert tops == sorted(tops)  # read in that order, top to bottom
            needs_you = browser.find_element(By.ID, "needs-you")
            assert "auth_failed" in needs_you.text
            assert "blocked" in needs_you.text
            assert "Build the 20261130-090000-auth-failed thing." in needs_you.text  # its title
            badge = needs_you.find_element(By.CSS_SELECTOR, ".phase.auth_failed")
            assert badge.value_of_css_property("background-color") == "rgba(196, 60, 60, 1)"
            done = browser.find_element(By.ID, "done").text
            assert "4 sent, 3 answered, 1 refused" in done
            assert "$0.0058 (turns $0.0048 + probes $0.0010)" in done
            assert rehearsed not in needs_you.text
            rehearsals = browser.find_element(By.ID, "rehearsals")
            assert rehearsals.get_attribute("open") is None  # folded
            assert "rgba(196, 60, 60" not in rehearsals.value_of_css_property("color")
            rehearsals.find_element(By.TAG_NAME, "summary").click()
            badge = rehearsals.find_element(By.CSS_SELECTOR, ".phase.auth_failed")
            assert "196, 60, 60" not in badge.value_of_css_property("background-color")
            gone = browser.find_element(By.ID, "gone")
            assert gone.get_attribute("open") is None  # folded
            assert "20261130-090000-removed" not in gone.text
            assert "rgba(196, 60, 60" not in gone.value_of_css_property("color")
            # Nothing past the window's right edge: no sideways scrolling at 800 px.
            # Nothing past the window's right edge: no sideways scrolling at 800 px.
            assert browser.execute_script("return document.body.scrollWidth") <= width
            for link in browser.find_elements(By.CSS_SELECTOR, "tr.run td:first-child a"):
                if link.is_displayed():
                    assert link.size["height"] < 24, f"{link.text} wraps at {width} px"
            _whole_page(browser, width)
            browser.execute_script("window.scrollTo(0, 0)")
            _screenshot(browser, f"front-{width}", tmp_path)
            browser.set_window_size(width, 1000)
    finally:
        shown.close()


def _a_runs_page_and_the_report_read_at_both_widths(browser: Any, tmp_path: Path) -> None:
    """A run's events as `claudeloop logs` says them, each one's JSON a click away; its
    pictures and the report's with legends; the report's run ids whole on one line and
    its labels inside the picture; the same at 1400 and 800 px wide."""
    from selenium.webdriver.common.by import By

    from claudeloop.adapters.run_index import RunIndexDirectory
    from tests.cli.test_one_read_model import SCRIPTS, driven

    env = {**os.environ, "CLAUDELOOP_STATE_DIR": str(tmp_path / "state")}
    index = RunIndexDirectory(tmp_path / "state" / "runs")
    for name in ("done", "auth_failed", "refused_then_probed"):
        driven(tmp_path / name, f"20261130-090000-{name.replace('_', '-')}", SCRIPTS[name], index)
    probed = "20261130-090000-refused-then-probed"
    shown = Dashboard(env)
    try:
        browser.get(shown.url)
        for width in (1400, 800):
            browser.set_window_size(width, 1000)
            browser.get(shown.base + "/")
            _settled(browser, lambda page: page.find_element(By.LINK_TEXT, probed).click() or True)
            events = _settled(
                browser, lambda page: page.find_elements(By.CSS_SELECTOR, "ol.events li")
            )
            words = [item.find_element(By.CSS_SELECTOR, ".words").text for item in events]
            assert "turn 1: started" in words
            assert "probe: capacity is back" in words
            assert not any(text.startswith("{") for text in words)
            finished = browser.find_element(By.CSS_SELECTOR, 'li[data-type="run.finished"]')
            raw = finished.find_element(By.TAG_NAME, "pre")
            assert not raw.is_displayed()  # folded
            finished.find_element(By.TAG_NAME, "summary").click()
            assert json.loads(raw.text)["type"] == "run.finished"
            for picture in ("svg.timeline", "svg.spend"):
                assert browser.find_elements(By.CSS_SELECTOR, f"{picture} g.legend")
            # The pictures' words as read on the screen, whatever the picture's scale.
            smallest = min(_shown_text_sizes(browser))
            assert smallest >= 11, f"a picture's words are {smallest:.1f} px at {width} px"
            assert _overlapping_legends(browser) == []
            # One time axis for both: the spend is not a second of its own.
            axes = [
                [label.text for label in picture.find_elements(By.CSS_SELECTOR, "text.axis")]
                for picture in browser.find_elements(By.CSS_SELECTOR, "svg.timeline, svg.spend")
                if picture.is_displayed()
            ]
            assert len(axes) == 2
            assert axes[0] == axes[1][-2:], axes
            _settled(browser, lambda page: page.find_element(By.ID, "live").text == "live")
            _whole_page(browser, width)
            _screenshot(browser, f"run-{width}", tmp_path)
            browser.set_window_size(width, 1000)
            # A run's page by its run id alone, as `claudeloop runs` says it.
            browser.get(shown.base + f"/run/{probed}")
            heading = _settled(browser, lambda page: page.find_element(By.TAG_NAME, "h1"))
            assert probed in heading.text

            browser.get(shown.base + "/report?since=30d")
            table = _settled(browser, lambda page: page.find_element(By.TAG_NAME, "table"))
            for run_id in table.find_elements(By.CSS_SELECTOR, ".run-id"):
                assert run_id.size["height"] < 24, f"{run_id.text} wraps at {width} px"
            spend = browser.find_element(By.CSS_SELECTOR, 'svg[aria-label="spend over time"]')
            legend = spend.find_elements(By.CSS_SELECTOR, "g.legend")
            assert len(legend) == 2  # each run that spent; the refused login spent nothing
            assert any(probed in entry.text for entry in legend)
            timeline = browser.find_element(By.CSS_SELECTOR, 'svg[aria-label="timeline"]')
            left = timeline.location["x"]
            right = left + timeline.size["width"]
            for label in timeline.find_elements(By.TAG_NAME, "text"):
                assert label.location["x"] >= left, f"{label.text} cut at the left edge"
                assert label.location["x"] + label.size["width"] <= right, f"{label.text} cut"
            names = [label.text for label in timeline.find_elements(By.CSS_SELECTOR, ".run-name")]
            assert probed in names
            # The turn the window refused is marked; each outcome in its colour.
            assert timeline.find_elements(By.CSS_SELECTOR, "rect.span.turn_refused")
            refused = browser.find_element(By.CSS_SELECTOR, ".phase.auth_failed")
            assert refused.value_of_css_property("background-color") == "rgba(196, 60, 60, 1)"
            done = browser.find_element(By.CSS_SELECTOR, ".phase.done")
            assert done.value_of_css_property("background-color") != "rgba(0, 0, 0, 0)"
            assert min(_shown_text_sizes(browser)) >= 11
            assert _overlapping_legends(browser) == []
            # No stream here, so no word of one: the page says when it was made.
            assert "live" not in browser.find_element(By.TAG_NAME, "header").text
            assert browser.execute_script("return document.body.scrollWidth") <= width
            _whole_page(browser, width)
            _screenshot(browser, f"report-{width}", tmp_path)
            browser.set_window_size(width, 1000)
    finally:
        shown.close()
