"""Block Kit for deploybot's Slack messages (pure: no I/O, no Slack client), one module per kind of message:
`status` (the living status message), `approval` (with the command line's diff from planners.argv), `diagnosis`,
`excerpts` (log lines), `replies` (the parent message, errors, help), `home` (App Home); `mrkdwn` holds the
escaping, shortening and Slack limits they share.

Everything that reaches Slack as mrkdwn passes through `mrkdwn.escape` (Slack's three control characters), and
every message stays inside Slack's limits (50 blocks per message, 3000 characters per section text, 100 blocks per
view): long output is shortened and says what was cut. Blocks are slack_sdk model objects, so building them
validates them (`Block.to_dict()` raises on a limit we missed).
"""
