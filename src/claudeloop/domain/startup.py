"""Why Claude Code refused to start (`startup_failure_reason`), said in one line with the fix.

The CLI (2.1.337) names 29 reasons, on the result it writes before it exits 1 (where the
host sets CLAUDE_CODE_STARTUP_FAILURE_RESULTS, as claudeloop does). No turn was sent, and
none will be until a person acts: the run fails (exit 1) with this line, and `claudeloop
resume` goes on once it is mended. A reason a later CLI adds is said with the CLI's own
words, so it is never lost.
"""

from __future__ import annotations

from typing import Literal, get_args

from claudeloop.domain.text import first_line

StartupFailureReason = Literal[
    "org_pin_api_key_conflict",
    "provider_not_allowed",
    "org_verify_failed",
    "org_pin_mismatch",
    "managed_settings_invalid",
    "remote_settings_required_unavailable",
    "gateway_signin_required",
    "gateway_access_denied",
    "proxy_invalid",
    "temp_dir_unusable",
    "cwd_unavailable",
    "shell_tool_missing",
    "session_held_by_background",
    "worktree_resume_refused",
    "worktree_unverified",
    "cli_version_too_old",
    "bypass_root",
    "org_config_required_unavailable",
    "org_config_refused",
    "sandbox_required_unavailable",
    "initialize_not_first",
    "config_file_invalid",
    "managed_settings_not_delivered",
    "initialize_fields_not_delivered",
    "sideload_flags_disabled",
    # Since 2.1.337 (2.1.332 ended the turn with an error result, "No conversation found").
    "resume_target_not_found",
    "consumer_terms_review_in_terminal",
    "consumer_terms_accept_on_web",
    "org_signin_ended",
]
STARTUP_FAILURE_REASONS: tuple[StartupFailureReason, ...] = get_args(StartupFailureReason)

_LOGIN = "log in again (`claudeloop login`), or use the credentials the organization pins"
_RETRY = "it may pass on its own: `claudeloop resume` in a while (check the network or proxy)"
# A session Claude Code no longer has: why that happens, and how the run goes on.
_GONE_WHY = (
    "has no transcript where Claude Code looks (removed after cleanupPeriodDays, or kept "
    "under another CLAUDE_CONFIG_DIR or on another machine)"
)
_GONE_FIX = (
    "`claudeloop resume --new-session` goes on in a new session with the run's plan, "
    "ledger and branch, or resume where CLAUDE_CONFIG_DIR holds the session"
)
_HOST = "claudeloop's launch of Claude Code was refused: upgrade claude-agent-sdk and claudeloop"
# The meaning and the fix of each reason (the CLI's own description, shortened).
_SAID: dict[StartupFailureReason, tuple[str, str]] = {
    "org_pin_api_key_conflict": (
        "managed settings pin a sign-in, and an API key or auth token is configured instead",
        "unset ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN and log in with the pinned account",
    ),
    "provider_not_allowed": (
        "managed settings do not allow this API provider (allowedProviders)",
        "use a provider the organization allows (or ask an admin to allow this one)",
    ),
    "org_verify_failed": ("the sign-in's organization could not be verified", _LOGIN),
    "org_pin_mismatch": ("the sign-in belongs to an organization the pin does not allow", _LOGIN),
    "managed_settings_invalid": (
        "managed policy settings could not be read or leave no allowed model",
        "ask an admin to fix the managed settings, or pick an allowed --model",
    ),
    "remote_settings_required_unavailable": (
        "managed settings the organization requires could not be loaded",
        _RETRY,
    ),
    "gateway_signin_required": ("the Cloud gateway ended this sign-in", _LOGIN),
    "gateway_access_denied": (
        "the Cloud gateway refused managed settings for this account",
        "ask an admin for access",
    ),
    "proxy_invalid": (
        "a proxy setting is not a complete URL",
        "fix HTTPS_PROXY / HTTP_PROXY (scheme, host and port)",
    ),
    "temp_dir_unusable": (
        "the per-user temp directory is unsafe or could not be created",
        "fix TMPDIR (a directory only this user can write)",
    ),
    "cwd_unavailable": (
        "the working directory was deleted, moved or cannot be read",
        "run from a directory that exists (--cwd)",
    ),
    "shell_tool_missing": (
        "Windows has no shell tool (Git Bash or PowerShell)",
        "install Git for Windows, or allow PowerShell",
    ),
    "session_held_by_background": (
        "the session to resume is running as a background session",
        "stop that background session, then `claudeloop resume`",
    ),
    "worktree_resume_refused": (
        "the session's worktree failed its safety checks",
        "resume from the project's own directory, or start a new run",
    ),
    "worktree_unverified": ("the session's worktree could not be verified right now", _RETRY),
    "cli_version_too_old": (
        "this Claude Code version is below the minimum Anthropic requires",
        "upgrade claude-agent-sdk (`pip install -U claude-agent-sdk`), which bundles the CLI, "
        "or point CLAUDELOOP_CLI_PATH at a newer Claude Code executable",
    ),
    "bypass_root": (
        "bypassPermissions was asked for while running as root",
        "run as another user, set IS_SANDBOX=1 inside a container or sandbox, or use "
        "another --permission-mode",
    ),
    "org_config_required_unavailable": (
        "the organization's policy limits and managed settings could not be loaded",
        _RETRY,
    ),
    "org_config_refused": (
        "Anthropic refused the organization's policy settings for this sign-in",
        _LOGIN + ", or ask an admin to allow Claude Code for the account",
    ),
    "sandbox_required_unavailable": (
        "a sandbox is required and cannot run here",
        "install bubblewrap (Linux) or have the sandbox requirement changed",
    ),
    "initialize_not_first": ("Claude Code was not sent its initialize request first", _HOST),
    "config_file_invalid": (
        "a configuration file of Claude Code is not valid JSON",
        "repair the file the CLI names (under CLAUDE_CONFIG_DIR or ~/.claude.json), or "
        "restore its backup",
    ),
    "managed_settings_not_delivered": ("the managed settings were not delivered", _HOST),
    "initialize_fields_not_delivered": ("the launch's settings were not delivered", _HOST),
    "sideload_flags_disabled": (
        "managed settings forbid the plugins, agents or MCP servers the launch names",
        "remove them from the settings claudeloop passes on, or ask an admin",
    ),
    "resume_target_not_found": (f"the session to resume {_GONE_WHY}", _GONE_FIX),
    "consumer_terms_review_in_terminal": (
        "the account has not answered Anthropic's updated Consumer Terms, and a start "
        "without a terminal cannot ask",
        "run `claudeloop claude` in a terminal once to review them, then `claudeloop resume`",
    ),
    "consumer_terms_accept_on_web": (
        "the account has not accepted Anthropic's updated Consumer Terms",
        "accept them on claude.ai, then `claudeloop resume`",
    ),
    "org_signin_ended": ("the organization's sign-in has ended and Claude Code removed it", _LOGIN),
}


def startup_refusal(reason: str, said: str = "") -> str:
    """One line: why Claude Code refused to start and what mends it. `said` is the CLI's
    own message (its `errors`), shown for a reason this claudeloop does not know."""
    words = first_line(said, longest=200)
    for known in STARTUP_FAILURE_REASONS:
        if known == reason:
            meaning, fix = _SAID[known]
            return f"Claude Code refused to start ({reason}): {meaning}: {fix}"
    detail = f": {words}" if words else ""
    return f"Claude Code refused to start ({reason}){detail}"


def session_gone(session_id: str) -> str:
    """One line for a session Claude Code has no conversation of, and how the run goes
    on: whichever way the CLI said it (`resume_target_not_found`, or "No conversation
    found" in an error result before 2.1.337)."""
    return f"Claude Code cannot resume session {session_id}: it {_GONE_WHY}: {_GONE_FIX}"
