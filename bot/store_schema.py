"""The store's schema: forward-only migrations, applied in order; ``PRAGMA user_version`` is how many ran.

A migration is never edited once released: a database written by an older bot is brought forward by the ones after
its version (bot/store.py's ``Store._migrate``).
"""

from __future__ import annotations

MIGRATIONS: list[str] = [
    # 1: the first schema
    """
    CREATE TABLE deployments (
        id TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        model TEXT NOT NULL,
        port INTEGER NOT NULL,
        state TEXT NOT NULL,
        requested_by TEXT,
        channel TEXT,
        thread_ts TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        data TEXT NOT NULL
    );
    CREATE INDEX deployments_host_state ON deployments(host, state);
    CREATE INDEX deployments_thread ON deployments(channel, thread_ts);
    CREATE TABLE approvals (
        id TEXT PRIMARY KEY,
        deployment_id TEXT,
        action TEXT NOT NULL,
        plan_hash TEXT,
        state TEXT NOT NULL,
        requested_by TEXT,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        decided_by TEXT,
        decided_at TEXT,
        data TEXT NOT NULL
    );
    CREATE TABLE audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at TEXT NOT NULL,
        actor TEXT,
        action TEXT NOT NULL,
        host TEXT,
        deployment_id TEXT,
        result TEXT,
        detail TEXT
    );
    CREATE INDEX audit_host_at ON audit(host, at);
    CREATE TABLE host_models (
        host TEXT PRIMARY KEY,
        models TEXT NOT NULL,
        probed_at TEXT NOT NULL
    );
    CREATE TABLE engine_help (
        host TEXT NOT NULL,
        engine TEXT NOT NULL,
        version TEXT NOT NULL,
        text TEXT NOT NULL,
        PRIMARY KEY (host, engine, version)
    );
    """,
    # 2: deliveries already handled (Slack retries the same request; it must act once)
    """
    CREATE TABLE deliveries (
        key TEXT PRIMARY KEY,
        at TEXT NOT NULL
    );
    """,
    # 3: where a chat surface's messages are (status message boards, approval messages), so that a restarted
    # bot goes on updating the same messages. Written only by the surface (handlers/slack/refs.py).
    """
    CREATE TABLE slack_status_boards (
        channel TEXT NOT NULL,
        status_ts TEXT NOT NULL,
        thread_ts TEXT,
        board TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (channel, status_ts)
    );
    CREATE TABLE slack_approval_messages (
        approval_id TEXT PRIMARY KEY,
        data TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    """,
    # 4: what each host's last probe saw (models, GPUs, engines): the inventory's source and `host list`. The
    # model lists of the first schema become views of their own.
    """
    CREATE TABLE host_views (
        host TEXT PRIMARY KEY,
        probed_at TEXT NOT NULL,
        view TEXT NOT NULL
    );
    INSERT INTO host_views (host, probed_at, view)
        SELECT host, probed_at, json_object('host', host, 'probed_at', probed_at, 'models', json(models))
        FROM host_models;
    DROP TABLE host_models
    """,
    # 5: a deployment names where it runs by its backend's handle, no longer by a PID and a log path (issue 15).
    # Rows of a process launched before keep following it: the handle is what the launch agent recorded (its exit
    # file next to the log, its key the log's name), so a bot killed before the upgrade resumes what runs.
    # basename(p) in SQLite: replace(p, rtrim(p, replace(p, '/', '')), '').
    """
    UPDATE deployments SET data = json_set(json_remove(data, '$.pid', '$.log_path'), '$.handle', json_object(
            'kind', 'process',
            'pid', json_extract(data, '$.pid'),
            'pgid', NULL,
            'key', CASE WHEN json_extract(data, '$.log_path') LIKE '%.log'
                THEN substr(replace(json_extract(data, '$.log_path'),
                                    rtrim(json_extract(data, '$.log_path'),
                                          replace(json_extract(data, '$.log_path'), '/', '')), ''),
                            1, length(replace(json_extract(data, '$.log_path'),
                                              rtrim(json_extract(data, '$.log_path'),
                                                    replace(json_extract(data, '$.log_path'), '/', '')), '')) - 4)
                ELSE NULL END,
            'log_path', json_extract(data, '$.log_path'),
            'exit_path', CASE WHEN json_extract(data, '$.log_path') LIKE '%.log'
                THEN substr(json_extract(data, '$.log_path'), 1, length(json_extract(data, '$.log_path')) - 4)
                     || '.exit'
                ELSE NULL END,
            'port', json_extract(data, '$.port')))
        WHERE json_extract(data, '$.pid') IS NOT NULL AND json_extract(data, '$.log_path') IS NOT NULL;
    UPDATE deployments SET data = json_remove(data, '$.pid', '$.log_path')
        WHERE json_type(data, '$.pid') IS NOT NULL OR json_type(data, '$.log_path') IS NOT NULL
    """,
]
