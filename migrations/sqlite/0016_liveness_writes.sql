-- Other replicas find the liveness records written since their last poll through a log of the
-- writes, card_liveness_writes (when, the tenant, and the agent ids as a JSON array), instead of
-- an index on card_liveness.updated_at, which every heartbeat moves: an update of an indexed
-- column rewrites the index entry too (and on Postgres, which the three dialects follow alike,
-- cannot be a HOT update). The log takes one row per tenant per write (a write carries up to
-- hundreds of heartbeats), in the write's transaction; the writers delete rows older than ten
-- minutes. The Postgres flavour also sets card_liveness's fillfactor, which SQLite has no
-- equivalent of.

-- +goose Up
DROP INDEX card_liveness_updated;

CREATE TABLE card_liveness_writes (
    seq        INTEGER     PRIMARY KEY,
    written_at DATETIME    NOT NULL,
    tenant_id  VARCHAR(63) NOT NULL,
    agent_ids  TEXT        NOT NULL
);
CREATE INDEX card_liveness_writes_at ON card_liveness_writes (written_at);

-- +goose Down
DROP TABLE card_liveness_writes;
CREATE INDEX card_liveness_updated ON card_liveness (updated_at);
