-- Other replicas find the liveness records written since their last poll through a log of the
-- writes, card_liveness_writes (when, the tenant, and the agent ids as a JSON array), instead of
-- an index on card_liveness.updated_at. Every heartbeat moves updated_at, and an update that
-- changes an indexed column cannot be a HOT update: Postgres writes a new entry into every index
-- of the table and leaves a dead row and dead index entries that only vacuum removes. With its
-- primary key alone, whose columns no write changes, every update of card_liveness (heartbeats,
-- probe results, probe claims) can stay on its page, and the dead versions are pruned there
-- without vacuum. The log takes one row per tenant per write (a write carries up to hundreds of
-- heartbeats), in the write's transaction; the writers delete rows older than ten minutes.
--
-- fillfactor, Postgres only (MySQL and SQLite have no such setting): pages filled to 90% by
-- inserts keep room for the new versions that HOT updates put on the same page. It applies to
-- pages written from now on.

-- +goose Up
DROP INDEX card_liveness_updated;
ALTER TABLE card_liveness SET (fillfactor = 90);

CREATE TABLE card_liveness_writes (
    seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    written_at TIMESTAMPTZ NOT NULL,
    tenant_id  VARCHAR(63) COLLATE "C" NOT NULL,
    agent_ids  TEXT        NOT NULL
);
CREATE INDEX card_liveness_writes_at ON card_liveness_writes (written_at);

-- +goose Down
DROP TABLE card_liveness_writes;
ALTER TABLE card_liveness RESET (fillfactor);
CREATE INDEX card_liveness_updated ON card_liveness (updated_at);
