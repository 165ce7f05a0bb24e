"""Where the model's commands and the checks run: the posture a start gets, its line,
and the checks never run unconfined."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claudeloop.domain.confinement import (
    BLOCKED_KINDS,
    BlockedAction,
    BlockedKind,
    Boundary,
    CommandsRefused,
    Confined,
    Unavailable,
    Unconfined,
    blocked_line,
    checks_refusal,
    domain_problem,
    posture,
    posture_line,
    posture_name,
    read_path_problem,
)

NO_BWRAP = Unavailable(why="bubblewrap not installed", fix="sudo apt-get install bubblewrap socat")


def test_the_default_is_confined_with_no_network() -> None:
    chosen = posture(Boundary(), None)
    assert chosen == Confined()
    assert posture_name(chosen) == "confined"
    assert "no network" in posture_line(chosen)
    assert "writes only in the working tree and temp" in posture_line(chosen)


def test_allowed_domains_are_said() -> None:
    chosen = posture(Boundary(allow_domains=("pypi.org", "*.npmjs.org")), None)
    assert chosen == Confined(allow_domains=("pypi.org", "*.npmjs.org"))
    assert "the network only to pypi.org, *.npmjs.org" in posture_line(chosen)


def test_no_sandbox_here_refuses_commands_and_names_the_fix() -> None:
    chosen = posture(Boundary(), NO_BWRAP)
    assert chosen == CommandsRefused(why=NO_BWRAP.why, fix=NO_BWRAP.fix)
    assert posture_name(chosen) == "refused"
    line = posture_line(chosen)
    assert line.startswith("sandbox unavailable: bubblewrap not installed")
    assert "shell commands are refused" in line
    assert "sudo apt-get install bubblewrap socat" in line
    assert "--sandbox off" in line


def test_off_is_unconfined_whatever_the_machine_can() -> None:
    for machine in (None, NO_BWRAP):
        chosen = posture(Boundary(on=False), machine)
        assert chosen == Unconfined()
        assert posture_name(chosen) == "off"
        assert posture_line(chosen).startswith("sandbox off (--sandbox off)")


def test_checks_are_refused_only_where_they_would_run_unconfined_against_the_users_word() -> None:
    refused = posture(Boundary(), NO_BWRAP)
    why = checks_refusal(refused, has_checks=True)
    assert why is not None
    assert why.startswith("--verify runs code the model wrote")
    assert "--sandbox off" in why
    assert NO_BWRAP.fix in why
    assert checks_refusal(refused, has_checks=False) is None
    assert checks_refusal(Confined(), has_checks=True) is None
    assert checks_refusal(Unconfined(), has_checks=True) is None


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("read", "sandbox blocked a read: ~/.ssh/id_rsa"),
        ("write", "sandbox blocked a write: ~/.ssh/id_rsa"),
        ("network", "sandbox blocked a connection: ~/.ssh/id_rsa"),
        ("escape", "sandbox blocked a command asking to leave the sandbox: ~/.ssh/id_rsa"),
        ("command", "sandbox blocked a command that needs approval: ~/.ssh/id_rsa"),
    ],
)
def test_each_kind_of_block_has_its_words(kind: BlockedKind, said: str) -> None:
    assert kind in BLOCKED_KINDS
    assert blocked_line(BlockedAction(kind, "~/.ssh/id_rsa")) == said


@pytest.mark.parametrize("text", ["pypi.org", "*.npmjs.org", "localhost", "files.pythonhosted.org"])
def test_domains_accepted(text: str) -> None:
    assert domain_problem(text) is None


@pytest.mark.parametrize("text", ["", "https://pypi.org", "pypi.org/simple", "a b", "*", "-x.org"])
def test_domains_refused(text: str) -> None:
    assert domain_problem(text) == "not a domain name such as pypi.org or *.npmjs.org"


@pytest.mark.parametrize("text", ["~", "~/.m2", "/opt/sdk"])
def test_read_paths_accepted(text: str) -> None:
    assert read_path_problem(text) is None


@pytest.mark.parametrize("text", ["", ".m2", "~user/x", "relative/path"])
def test_read_paths_refused(text: str) -> None:
    problem = read_path_problem(text)
    assert problem is not None
    assert "absolute or under ~" in problem


@given(
    on=st.booleans(),
    domains=st.lists(st.sampled_from(["pypi.org", "*.npmjs.org"]), max_size=2),
    machine=st.sampled_from([None, NO_BWRAP]),
    has_checks=st.booleans(),
)
def test_never_an_unconfined_fallback(
    on: bool, domains: list[str], machine: Unavailable | None, has_checks: bool
) -> None:
    """Commands and checks run unconfined only when the user said off."""
    chosen = posture(Boundary(on=on, allow_domains=tuple(domains)), machine)
    assert isinstance(chosen, Unconfined) == (not on)
    if on and machine is not None:
        assert isinstance(chosen, CommandsRefused)
        assert (checks_refusal(chosen, has_checks=has_checks) is not None) == has_checks
