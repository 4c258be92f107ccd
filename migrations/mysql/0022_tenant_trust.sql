-- A tenant's trust policy, as one JSON array of issuers {domain, jwksUrl | keys, updatedAt} in
-- domain order: read by imports, refreshes and the trust requests, and written only by the trust
-- requests (read, changed and written back under the row's lock).

-- +goose Up
ALTER TABLE tenants ADD COLUMN trust MEDIUMTEXT NOT NULL DEFAULT ('[]');

-- +goose Down
ALTER TABLE tenants DROP COLUMN trust;
