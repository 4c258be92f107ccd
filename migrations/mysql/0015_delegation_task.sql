-- The task a delegation carried, as its caller sent it, cut to delegation.recordTaskBytes
-- (task_truncated says it was cut); empty where none was kept: delegations refused before they were sent, a server
-- with delegation.recordTask off, a tenant that hides its tasks (hide_delegation_tasks), and
-- records older than this column.
-- A TEXT column takes its default as an expression, DEFAULT (''), on MariaDB 10.2 and MySQL
-- 8.0.13 and later: older records get '', and a replica of the previous release, which does not
-- write the column, goes on inserting records while the others are upgraded.

-- +goose Up
ALTER TABLE delegations ADD COLUMN task MEDIUMTEXT NOT NULL DEFAULT ('');
ALTER TABLE delegations ADD COLUMN task_truncated BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE tenants ADD COLUMN hide_delegation_tasks BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE tenants DROP COLUMN hide_delegation_tasks;
ALTER TABLE delegations DROP COLUMN task_truncated;
ALTER TABLE delegations DROP COLUMN task;
