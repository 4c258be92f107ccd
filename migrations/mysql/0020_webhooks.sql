-- Webhook subscriptions and their delivery records (docs/webhooks.md). A subscription follows
-- the tenant's change feed from feed_cursor, a cards.changes cursor moved past a page of changes
-- only once its subscriber answered 2xx to each (or a change does not match its filter); recent
-- is a JSON array of the feed entries delivered that the feed may answer again (those of the
-- page in progress, and those above the horizon of the pass), so that none is sent twice. One replica at a time
-- delivers to a subscriber: the one whose lease (lease_owner, lease_until) is current. types and
-- agent_ids are the filter, JSON arrays (empty: everything). Deliveries keep the last
-- webhooks.keepDeliveries attempts per subscription; storage deletes both with their tenant, and the records with their
-- subscription.

-- +goose Up
CREATE TABLE webhooks (
    tenant_id       VARCHAR(63)   NOT NULL,
    webhook_id      VARCHAR(64)   NOT NULL,
    url             VARCHAR(2048) NOT NULL,
    types           TEXT          NOT NULL,
    agent_ids       TEXT          NOT NULL,
    state           VARCHAR(16)   NOT NULL,
    feed_cursor     VARCHAR(512)  NOT NULL,
    recent          TEXT          NOT NULL,
    failures        INTEGER       NOT NULL DEFAULT 0,
    failing_since   DATETIME(6),
    last_error      VARCHAR(300)  NOT NULL DEFAULT '',
    next_attempt_at DATETIME(6)   NOT NULL,
    lease_owner     VARCHAR(64)   NOT NULL DEFAULT '',
    lease_until     DATETIME(6),
    created_at      DATETIME(6)   NOT NULL,
    updated_at      DATETIME(6)   NOT NULL,
    PRIMARY KEY (tenant_id, webhook_id),
    CONSTRAINT webhooks_tenant_fk FOREIGN KEY (tenant_id) REFERENCES tenants (tenant_id),
    INDEX webhooks_due (next_attempt_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE webhook_deliveries (
    seq         BIGINT        NOT NULL AUTO_INCREMENT PRIMARY KEY,
    tenant_id   VARCHAR(63)   NOT NULL,
    webhook_id  VARCHAR(64)   NOT NULL,
    event_id    VARCHAR(300)  NOT NULL,
    event_type  VARCHAR(64)   NOT NULL,
    agent_id    VARCHAR(128)  NOT NULL,
    status_code INTEGER       NOT NULL DEFAULT 0,
    ok          BOOLEAN       NOT NULL,
    error_text  VARCHAR(300)  NOT NULL DEFAULT '',
    latency_ms  BIGINT        NOT NULL DEFAULT 0,
    attempted_at DATETIME(6)   NOT NULL,
    INDEX webhook_deliveries_hook (tenant_id, webhook_id, seq),
    CONSTRAINT webhook_deliveries_hook_fk FOREIGN KEY (tenant_id, webhook_id) REFERENCES webhooks (tenant_id, webhook_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- +goose Down
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
