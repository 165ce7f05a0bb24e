"""Notifications from the command line: --notify is checked before a run starts,
`config show` keeps the URLs' secrets, and the composition root sends what a run calls
for without ever letting a failed delivery change how the run ends."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from claudeloop.adapters.claude_code.backend import backend_for
from claudeloop.adapters.config.profiles import DEFAULT_BACKEND
from claudeloop.adapters.notify.sender import NotifyTargets
from claudeloop.adapters.run_directory.starting import create as create_directory
from claudeloop.adapters.run_directory.starting import new_record
from claudeloop.application.driving import drive_run
from claudeloop.application.fleet_seat import NO_SEAT
from claudeloop.application.ports import ProbeOutcome, TurnOutcome
from claudeloop.application.records import RunSpec
from claudeloop.cli.bootstrap.runs import wire_run
from claudeloop.domain.completion import StructuredVerdict
from claudeloop.domain.loop import Outcome
from claudeloop.domain.signals import TurnSignals
from tests.cli.conftest import Invocation
from tests.cli.test_user_errors import assert_one_line_error
from tests.notification_receiver import notification_receiver

Invoke = Callable[..., Invocation]


def test_a_notify_flag_that_is_not_a_url_is_refused_in_one_line(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    result = claudeloop(
        "run", "--prompt", "x", "--cwd", tmp_path, "--notify", "tgram//123:SECRETTOKEN/1"
    )
    assert_one_line_error(result, "--notify", "'tgram/****' is not an apprise URL")
    assert "SECRETTOKEN" not in result.err
    assert not (tmp_path / ".claudeloop").exists()


def test_a_url_apprise_has_no_service_for_is_refused_before_the_run_starts(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    result = claudeloop(
        "run", "--prompt", "x", "--cwd", tmp_path, "--notify", "nosuchservice://tok-SECRET/x"
    )
    assert_one_line_error(
        result, "notify (from flag --notify)", "nosuchservice://****/****", "no service"
    )
    assert "tok-SECRET" not in result.err
    assert not (tmp_path / ".claudeloop").exists()


def test_without_apprise_a_configured_notify_says_how_to_install_it(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "apprise", None)
    (tmp_path / "claudeloop.toml").write_text('notify = ["ntfy://ntfy.sh/my-topic"]\n')
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path)
    # This checkout is an editable install: the hint installs its notify extra from here.
    assert_one_line_error(
        result, f"notify (from {tmp_path / 'claudeloop.toml'})", " -e '", "[notify]'"
    )


def test_config_show_masks_the_secrets_of_notify_urls(claudeloop: Invoke, tmp_path: Path) -> None:
    (tmp_path / "claudeloop.toml").write_text(
        'notify = ["mailto://me:hunter22pw@gmail.com", "tgram://123456:BOTSECRET/42"]\n'
        'notify_on = ["done", "credits"]\n'
    )
    text = claudeloop("config", "show", "--cwd", tmp_path)
    assert text.exit_code == 0, text.err
    assert 'notify                  ["mailto://****@gmail.com", "tgram://****/****"]' in text.out
    assert 'notify_on               ["done", "credits"]' in text.out
    shown = json.loads(claudeloop("config", "show", "--cwd", tmp_path, "--json").out)
    assert shown["settings"]["notify"]["value"] == ["mailto://****@gmail.com", "tgram://****/****"]
    for result in (text, claudeloop("config", "show", "--cwd", tmp_path, "--json")):
        assert "hunter22pw" not in result.out
        assert "BOTSECRET" not in result.out


class FinishingGateway:
    """Answers the first turn with a complete verdict."""

    async def run_turn(
        self,
        prompt: str,
        *,
        session_id: str | None,
        interrupted_at: datetime | None = None,
        on_session: Callable[[str], None] | None = None,
    ) -> TurnOutcome:
        return TurnOutcome(
            signals=TurnSignals(),
            structured=StructuredVerdict(complete=True, summary="All written."),
            final_text="All written.",
            cost_usd=0.42,
            session_id="session-1",
        )

    async def probe(self) -> ProbeOutcome:
        return ProbeOutcome(signals=TurnSignals())

    async def get_ready(self, session_id: str | None) -> None:
        return  # nothing to start ahead

    async def stand_down(self) -> None:
        return

    async def close(self) -> tuple[str, ...]:
        return ()


def run_to_the_end(tmp_path: Path, urls: tuple[str, ...]) -> tuple[Outcome | None, list[str]]:
    record = new_record(RunSpec(cwd=tmp_path, task="Write hello.txt"), "notified")
    directory = create_directory(record)
    ended = drive_run(
        wire_run(
            directory,
            record,
            backend=backend_for(DEFAULT_BACKEND),
            quiet=True,
            gateway=FinishingGateway(),
            notify=NotifyTargets(urls=urls),
            seat=NO_SEAT,
        ),
        record,
        resumed=False,
    )
    lines = directory.events_path.read_text().splitlines()
    return ended.state.outcome, lines


def test_a_finished_run_notifies_every_configured_url(tmp_path: Path) -> None:
    with notification_receiver() as receiver:
        outcome, _ = run_to_the_end(tmp_path, (receiver.url("a"), receiver.url("b")))
    assert outcome is Outcome.DONE
    assert sorted(item["path"] for item in receiver.received) == ["/a", "/b"]
    assert set(receiver.titles()) == {"claudeloop: run notified done — $0.42"}


def test_a_notification_that_cannot_be_delivered_is_logged_and_the_run_still_ends_done(
    tmp_path: Path,
) -> None:
    with notification_receiver(status=503) as receiver:
        outcome, lines = run_to_the_end(tmp_path, (receiver.url("secret-path-123"),))
    assert outcome is Outcome.DONE
    failures = [json.loads(line) for line in lines if '"notify.failed"' in line]
    assert len(failures) == 1
    assert failures[0]["service"] == f"json://127.0.0.1:{receiver.port}/****"
    assert failures[0]["kind"] == "done"
    assert "secret-path-123" not in "\n".join(lines)


def test_a_plain_word_given_as_notify_is_shown_as_typed(claudeloop: Invoke, tmp_path: Path) -> None:
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path, "--notify", "notaurl")
    assert_one_line_error(result, "--notify", "'notaurl' is not an apprise URL", "scheme://")


def test_a_password_in_a_url_without_a_scheme_stays_masked(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    result = claudeloop(
        "run", "--prompt", "x", "--cwd", tmp_path, "--notify", "me:hunter2pw@mail.example.com"
    )
    assert_one_line_error(result, "--notify", "is not an apprise URL")
    assert "hunter2pw" not in result.err
