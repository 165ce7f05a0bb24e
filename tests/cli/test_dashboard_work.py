"""A run's work on the dashboard (cli/dashboard/work.py) on a branch in memory: its
turns' diffs on its page, a page that says what a button will do before it does it, the
merge, a conflicting merge said with the command that resolves it, the rewind, and
every new action refused without the cookie or from another origin."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import pytest
from starlette.testclient import TestClient

from claudeloop.application.branch import Merged
from tests.application.test_branch import committing
from tests.application.test_dashboard import entry
from tests.application.test_run_work import GitLikeBranches
from tests.cli.test_dashboard_app import client_of, machine

SAME = {"Origin": "http://testserver"}


@dataclass
class CountedBranches(GitLikeBranches):
    merges: list[str] = field(default_factory=list)

    def merge(self, repository: Path, branch: str, into: str) -> Merged:
        self.merges.append(branch)
        return super().merge(repository, branch, into)


def client_with(branches: CountedBranches, *, signed_in: bool = True) -> TestClient:
    return client_of(*machine(), branches=branches, signed_in=signed_in)


def _branches() -> CountedBranches:
    runs = CountedBranches({"r1": committing("r1")})
    runs.lines["r1"] = [{"type": "verify.finished", "turn": 3, "command": "pytest", "passed": True}]
    return runs


def _said(client: TestClient, answer_location: str) -> str:
    return unquote(answer_location.split("said=", 1)[1].split("#", 1)[0])


def test_the_runs_page_shows_each_turns_files_diff_and_checks_newest_first() -> None:
    page = client_with(_branches()).get(f"/run/{entry('r1').key}").text
    assert "Work on claudeloop/r1" in page
    assert page.index('data-turn="3"') < page.index('data-turn="1"')
    assert "+step 3" in page
    assert "step3.txt | 1 +" in page
    assert "passed: <code>pytest</code>" in page
    assert "Merge into main" in page


@pytest.mark.parametrize("action", ["merge", "rewind", "resume"])
def test_each_action_is_refused_without_the_cookie_or_from_another_origin(action: str) -> None:
    branches = _branches()
    where = f"/run/{entry('r1').key}/do-branch/{action}"
    signed_out = client_with(branches, signed_in=False)
    assert signed_out.post(where, headers=SAME, data={"to_turn": "1"}).status_code == 403
    client = client_with(branches)
    away = {"Origin": "http://elsewhere.example"}
    assert client.post(where, headers=away, data={"to_turn": "1"}).status_code == 403
    assert client.post(where, data={"to_turn": "1"}).status_code == 403
    assert branches.merges == []
    assert branches.commits == [1, 2, 3]
    assert branches.told == []


def test_a_merge_says_what_it_will_do_then_merges() -> None:
    branches = _branches()
    client = client_with(branches)
    key = entry("r1").key
    asked = client.get(f"/run/{key}/confirm/merge").text
    assert "Merge claudeloop/r1 into main: the commits of turns 1, 2, 3 land on main" in asked
    assert branches.merges == []  # asking changes nothing
    done = client.post(f"/run/{key}/do-branch/merge", headers=SAME, follow_redirects=False)
    assert _said(client, done.headers["location"]) == (
        f"merged claudeloop/r1 into main: {'cd' * 6}"
    )
    assert branches.merges == ["claudeloop/r1"]


def test_a_conflicting_merge_is_said_with_the_command_that_resolves_it() -> None:
    branches = _branches()
    branches.conflicting = ("step1.txt",)
    client = client_with(branches)
    done = client.post(
        f"/run/{entry('r1').key}/do-branch/merge", headers=SAME, follow_redirects=False
    )
    said = _said(client, done.headers["location"])
    assert "claudeloop/r1 does not merge cleanly into main: 1 file(s) conflict (step1.txt)" in said
    assert "Nothing was merged; main is as it was" in said
    assert "`claudeloop merge r1 --resolve`" in said


def test_a_rewind_names_the_turns_it_drops_then_drops_them() -> None:
    branches = _branches()
    client = client_with(branches)
    key = entry("r1").key
    asked = client.get(f"/run/{key}/confirm/rewind", params={"to_turn": "1"}).text
    assert "the commits of turns 2, 3 are dropped" in asked
    assert 'name="to_turn" value="1"' in asked
    done = client.post(
        f"/run/{key}/do-branch/rewind", headers=SAME, data={"to_turn": "1"}, follow_redirects=False
    )
    assert "rewound to turn 1" in _said(client, done.headers["location"])
    assert branches.commits == [1]
    bad = client.post(
        f"/run/{key}/do-branch/rewind", headers=SAME, data={"to_turn": "x"}, follow_redirects=False
    )
    assert "to_turn: 'x' is not a turn number" in _said(client, bad.headers["location"])
    assert client.get(f"/run/{key}/confirm/dance", follow_redirects=False).status_code == 303
