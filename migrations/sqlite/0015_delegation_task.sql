-- The task a delegation carried, as its caller sent it, cut to delegation.recordTaskBytes
-- (task_truncated says it was cut); empty where none was kept: delegations refused before they were sent, a server
-- with delegation.recordTask off, a tenant that hides its tasks (hide_delegation_tasks), and
-- records older than this column.

-- +goose Up
ALTER TABLE delegations ADD COLUMN task TEXT NOT NULL DEFAULT '';
ALTER TABLE delegations ADD COLUMN task_truncated BOOLEAN NOT NULL DEFAULT 0;
ALTER TABLE tenants ADD COLUMN hide_delegation_tasks BOOLEAN NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE tenants DROP COLUMN hide_delegation_tasks;
ALTER TABLE delegations DROP COLUMN task_truncated;
ALTER TABLE delegations DROP COLUMN task;
