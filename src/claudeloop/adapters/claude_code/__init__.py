"""Claude Code through claude-agent-sdk: the gateway and the reading of its messages.

The gateway's names are imported when first asked for: a command that only needs the
package's light modules (`backend`, for a profile's advice) does not import the SDK,
whose import takes seconds (`status --engine` waited on it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from claudeloop.adapters.claude_code.options import GatewaySettings
    from claudeloop.adapters.claude_code.sdk_gateway import ClaudeCodeGateway

__all__ = ["ClaudeCodeGateway", "GatewaySettings"]


def __getattr__(name: str) -> Any:
    if name == "GatewaySettings":
        from claudeloop.adapters.claude_code.options import GatewaySettings

        return GatewaySettings
    if name == "ClaudeCodeGateway":
        from claudeloop.adapters.claude_code.sdk_gateway import ClaudeCodeGateway

        return ClaudeCodeGateway
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
