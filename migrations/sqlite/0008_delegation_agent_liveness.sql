-- The liveness of the card's agent when a delegation was made (online, offline, unknown): a
-- delegation to an agent not heard from is sent all the same, and its record says so. Empty for
-- records made before this migration.

-- +goose Up
ALTER TABLE delegations ADD COLUMN agent_liveness VARCHAR(8) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE delegations DROP COLUMN agent_liveness;
