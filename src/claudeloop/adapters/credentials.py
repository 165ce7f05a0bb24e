"""The variables the Claude Code CLI authenticates with, and those that send it to
another provider: the one list every other list of credential variables derives from.

Kept apart from `adapters/claude_code/` so that reading configuration does not import
the SDK (`claudeloop --help` stays fast).
"""

from __future__ import annotations

# Each one set is a credential the CLI may send, in the words `doctor` shows.
CREDENTIALS = {
    "CLAUDE_CODE_OAUTH_TOKEN": "OAuth token",
    "ANTHROPIC_API_KEY": "API key",
    "ANTHROPIC_AUTH_TOKEN": "auth token",
}
# Each one set sends the CLI's requests to a cloud provider instead of Anthropic's API.
PROVIDERS = {
    "CLAUDE_CODE_USE_BEDROCK": "Amazon Bedrock",
    "CLAUDE_CODE_USE_VERTEX": "Google Vertex AI",
    "CLAUDE_CODE_USE_FOUNDRY": "Microsoft Foundry",
}
CREDENTIAL_VARIABLES = tuple(CREDENTIALS)
PROVIDER_VARIABLES = tuple(PROVIDERS)
