-- The version of every card of a tenant (agent id, card id, revision, updated_at) in agent id order,
-- readable from this index alone: a search index read back from its snapshot compares itself
-- with them at every start, and reading them from the table would visit every card's row (on
-- SQLite, a lookup per card: 100k versions took 0.54-0.60 s, and 0.20-0.21 s from this index).

-- +goose Up
CREATE INDEX cards_versions ON cards (tenant_id, agent_id, id, revision, updated_at);

-- +goose Down
DROP INDEX cards_versions;
