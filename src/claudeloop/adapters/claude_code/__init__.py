"""Claude Code through claude-agent-sdk: the gateway and the reading of its messages."""

from claudeloop.adapters.claude_code.gateway import ClaudeCodeGateway
from claudeloop.adapters.claude_code.options import GatewaySettings

__all__ = ["ClaudeCodeGateway", "GatewaySettings"]
