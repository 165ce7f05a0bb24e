"""The run's one redactor knows every secret the run can meet: its own environment's,
the CLI's, the detour profiles' and the notification URLs'."""

from __future__ import annotations

from pathlib import Path

import pytest

from claudeloop.adapters.claude_code.backend import Backend
from claudeloop.adapters.notify.sender import NotifyTargets
from claudeloop.adapters.run_directory.redacted import RedactedEvents
from claudeloop.adapters.run_secrets import run_redactor
from claudeloop.application.errors import UsageError
from claudeloop.application.events import TurnFinished
from claudeloop.application.records import RunSpec
from claudeloop.domain.limits import LimitPolicies, SwitchProfile
from tests.application.fakes import MemoryEvents


def test_it_masks_the_secrets_of_every_backend_and_notification_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVICE_PAT", "own-pat-value-1")
    spec = RunSpec(
        cwd=tmp_path,
        task="t",
        limits=LimitPolicies((("five_hour", SwitchProfile("spare")),)),
    )
    backend = Backend(env={"DEPLOY_PASS": "extra-env-pass-2", "ANTHROPIC_AUTH_TOKEN": "tok-3abc"})

    def detours(name: str) -> Backend:
        assert name == "spare"
        return Backend(env={"ANTHROPIC_AUTH_TOKEN": "spare-token-4"})

    notify = NotifyTargets(urls=("json://me:notify-pass-5@127.0.0.1:9/hook",))
    redactor = run_redactor(spec, backend, notify, detours)
    text = "own-pat-value-1 extra-env-pass-2 tok-3abc spare-token-4 notify-pass-5"
    assert redactor.text(text) == " ".join(["[redacted]"] * 5)


def test_a_detour_profile_that_no_longer_resolves_is_left_to_fail_when_taken(
    tmp_path: Path,
) -> None:
    spec = RunSpec(
        cwd=tmp_path, task="t", limits=LimitPolicies((("five_hour", SwitchProfile("gone")),))
    )

    def detours(name: str) -> Backend:
        raise UsageError(f"profile {name} is not defined")

    redactor = run_redactor(spec, Backend(env={"X_TOKEN": "x-token-value"}), None, detours)
    assert redactor.text("x-token-value") == "[redacted]"


def test_every_sink_behind_redacted_gets_the_masked_fields() -> None:
    seen = MemoryEvents()
    sink = RedactedEvents(
        seen, run_redactor(RunSpec(cwd=Path(), task="t"), Backend(env={}), None, None)
    )
    key = "sk-ant-api03-abcdefghijklmnop"
    sink.emit(
        TurnFinished(
            turn=1,
            capacity="available",
            verdict="done",
            summary=f"key {key}",
            cost_usd=0.01,
            session_id=None,
            denied_tools=(f"Bash({key})",),
            sent=True,
            error=f"said {key}",
        )
    )
    (finished,) = seen.events
    assert finished["summary"] == "key [redacted]"
    assert finished["denied_tools"] == ["Bash([redacted])"]
    assert finished["error"] == "said [redacted]"
    assert key not in str(seen.emitted)
