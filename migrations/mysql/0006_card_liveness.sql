-- Liveness of cards: the last heartbeat, the last probe and what it found. One row per agent,
-- written apart from the card (a heartbeat moves no revision and writes no change-feed entry),
-- and read back by every replica by updated_at. card_id is the card the row was written for: a
-- row left by a deleted card of the same agentId is ignored and then overwritten. No foreign key:
-- rows go with their card and their tenant in the transactions that delete those.
-- probe_owner and probe_until lease the card's next probe to one replica (refresh_owner and
-- refresh_until its next scheduled refresh from its source): a replica does only what it
-- claimed, and claims only what nobody holds.

-- +goose Up
CREATE TABLE card_liveness (
    tenant_id        VARCHAR(63)  NOT NULL,
    agent_id         VARCHAR(128) NOT NULL,
    card_id          VARCHAR(36)  NOT NULL,
    seen_at          DATETIME(6)  NULL,
    probed_at        DATETIME(6)  NULL,
    down_at          DATETIME(6)  NULL,
    checked_at       DATETIME(6)  NULL,
    probe_failures   INT          NOT NULL DEFAULT 0,
    probe_latency_ms INT          NOT NULL DEFAULT 0,
    probe_error      VARCHAR(300) NOT NULL DEFAULT '',
    probe_owner      VARCHAR(64)  NOT NULL DEFAULT '',
    probe_until      DATETIME(6)  NULL,
    refresh_owner    VARCHAR(64)  NOT NULL DEFAULT '',
    refresh_until    DATETIME(6)  NULL,
    updated_at       DATETIME(6)  NOT NULL,
    PRIMARY KEY (tenant_id, agent_id),
    INDEX card_liveness_updated (updated_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- +goose Down
DROP TABLE card_liveness;
