-- The A2A interface an a2a delegation was sent to: its protocol binding (JSONRPC, HTTP+JSON)
-- and the protocol version spoken (1.0, 0.3). Empty for http delegations and for records made
-- before this migration.

-- +goose Up
ALTER TABLE delegations ADD COLUMN a2a_binding VARCHAR(16) NOT NULL DEFAULT '';
ALTER TABLE delegations ADD COLUMN a2a_version VARCHAR(8) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE delegations DROP COLUMN a2a_version;
ALTER TABLE delegations DROP COLUMN a2a_binding;
