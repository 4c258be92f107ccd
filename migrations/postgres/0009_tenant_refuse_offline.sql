-- A tenant setting: refuse a delegation to a card whose agent is offline (409 agent_offline),
-- instead of sending it and recording that the card was offline.

-- +goose Up
ALTER TABLE tenants ADD COLUMN refuse_offline_delegation BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE tenants DROP COLUMN refuse_offline_delegation;
