"""The MCP server of the ADK events capture: a real `mcp` MCPServer over stdio.

`search_users` answers from a fixed directory; an unknown login raises, which MCP returns
as a tool result with `isError: true`.
"""
from __future__ import annotations

import json

from mcp.server.mcpserver import MCPServer

USERS = {"themsquared": {"login": "themsquared", "name": "M. Squared", "repos": 12}}
server = MCPServer("directory")


@server.tool()
def search_users(query: str) -> str:
    """Search the user directory by login."""
    if query not in USERS:
        raise ValueError(f"no user matches {query!r}")
    return json.dumps({"total_count": 1, "items": [USERS[query]]})


if __name__ == "__main__":
    server.run("stdio")
