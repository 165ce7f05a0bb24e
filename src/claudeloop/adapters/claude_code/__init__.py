"""Claude Code through claude-agent-sdk: the gateway and the reading of its messages."""

from claudeloop.adapters.claude_code.options import GatewaySettings
from claudeloop.adapters.claude_code.sdk_gateway import ClaudeCodeGateway

__all__ = ["ClaudeCodeGateway", "GatewaySettings"]
