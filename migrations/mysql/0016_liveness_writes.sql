-- Other replicas find the liveness records written since their last poll through a log of the
-- writes, card_liveness_writes (when, the tenant, and the agent ids as a JSON array), instead of
-- an index on card_liveness.updated_at, which every heartbeat moves: an update of an indexed
-- column rewrites the index entry too (and on Postgres, which the three dialects follow alike,
-- cannot be a HOT update). The log takes one row per tenant per write (a write carries up to
-- hundreds of heartbeats), in the write's transaction; the writers delete rows older than ten
-- minutes. agent_ids is MEDIUMTEXT: a row lists up to 200 ids of up to 128 characters.
-- The Postgres flavour also sets card_liveness's fillfactor, which InnoDB has no equivalent of.

-- +goose Up
DROP INDEX card_liveness_updated ON card_liveness;

CREATE TABLE card_liveness_writes (
    seq        BIGINT      NOT NULL AUTO_INCREMENT PRIMARY KEY,
    written_at DATETIME(6) NOT NULL,
    tenant_id  VARCHAR(63) NOT NULL,
    agent_ids  MEDIUMTEXT  NOT NULL,
    INDEX card_liveness_writes_at (written_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- +goose Down
DROP TABLE card_liveness_writes;
CREATE INDEX card_liveness_updated ON card_liveness (updated_at);
