-- Delegation records imported from another registry (delegations.import), and the order the
-- lists read records in.
--
-- imported names the registry a record was imported from (agentkit-mesh); '' for the records the
-- service made. An imported record keeps the id it had there, a UUID of any version (agentkit-mesh
-- writes random ones), so the order of ids is no longer the order of creation: the lists read
-- records by created_at, then id, and the caller's index follows.

-- +goose Up
ALTER TABLE delegations ADD COLUMN imported VARCHAR(32) NOT NULL DEFAULT '';
CREATE INDEX delegations_tenant_created ON delegations (tenant_id, created_at, id);
CREATE INDEX delegations_tenant_caller_created ON delegations (tenant_id, caller, created_at, id);
DROP INDEX delegations_tenant_caller ON delegations;

-- +goose Down
CREATE INDEX delegations_tenant_caller ON delegations (tenant_id, caller, id);
DROP INDEX delegations_tenant_caller_created ON delegations;
DROP INDEX delegations_tenant_created ON delegations;
ALTER TABLE delegations DROP COLUMN imported;
