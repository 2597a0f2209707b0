"""The MCP host: servers the user configured (Model Context Protocol) as one more tool source,
through the official `mcp` SDK — local over stdio, remote over Streamable HTTP or legacy SSE.

Guarantees: a server's secrets live in the OS keyring only, never in `mcp.json` (`config`); a
local server starts with a minimal environment, never the app's (`env`), under a guard that
stops it and everything it started when the app ends, a kill included (`guard`); a slow or hung
server never blocks a caller past its deadline, and a cancelled call is cancelled on the server
too (`client`); a failure is one sentence in words with redacted details, never an exception
class or a traceback (`words`, `stderr`); its tools are Harmony function tools under unique
names, their arguments checked against the server's schema and their results cut to a limit
(`tools`, `results`); what a server asks beside tool calls — sampling, elicitation — is asked
of a person, bounded in time and written to the audit log (`hooks`, `asks`, `sampling`,
`elicit`, `answers`); an OAuth 2.1 sign-in happens only when the user asks for one, through a
loopback redirect on 127.0.0.1 (`oauth`, `redirect`). Importing this package imports nothing.
"""
