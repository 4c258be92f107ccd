-- A tenant's trust policy, as one JSON array of issuers {domain, jwksUrl | keys, updatedAt} in
-- domain order: read by imports, refreshes and the trust requests, and written only by the trust
-- requests (read, changed and written back under the row's lock). trust_pending maps each domain
-- whose cards a change of the policy has yet to weigh again to the number of that change; the pass
-- that weighs them clears it, unless another change came meanwhile.

-- +goose Up
ALTER TABLE tenants ADD COLUMN trust MEDIUMTEXT NOT NULL DEFAULT ('[]');
ALTER TABLE tenants ADD COLUMN trust_pending TEXT NOT NULL DEFAULT ('{}');

-- +goose Down
ALTER TABLE tenants DROP COLUMN trust_pending;
ALTER TABLE tenants DROP COLUMN trust;
