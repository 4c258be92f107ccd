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
    tenant_id        VARCHAR(63)  COLLATE "C" NOT NULL,
    agent_id         VARCHAR(128) COLLATE "C" NOT NULL,
    card_id          VARCHAR(36)  COLLATE "C" NOT NULL,
    seen_at          TIMESTAMPTZ,
    probed_at        TIMESTAMPTZ,
    down_at          TIMESTAMPTZ,
    checked_at       TIMESTAMPTZ,
    probe_failures   INTEGER      NOT NULL DEFAULT 0,
    probe_latency_ms INTEGER      NOT NULL DEFAULT 0,
    probe_error      VARCHAR(300) NOT NULL DEFAULT '',
    probe_owner      VARCHAR(64)  NOT NULL DEFAULT '',
    probe_until      TIMESTAMPTZ,
    refresh_owner    VARCHAR(64)  NOT NULL DEFAULT '',
    refresh_until    TIMESTAMPTZ,
    updated_at       TIMESTAMPTZ  NOT NULL,
    PRIMARY KEY (tenant_id, agent_id)
);
CREATE INDEX card_liveness_updated ON card_liveness (updated_at);

-- +goose Down
DROP TABLE card_liveness;
