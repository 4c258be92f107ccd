-- The deadline of each delegation: its creation time plus its timeout. A callback after it is
-- refused (410), and a read reports a delegation still pending, running or accepted past it as
-- timeout. NULL for records made before this migration and for refused ones, which never wait.

-- +goose Up
ALTER TABLE delegations ADD COLUMN deadline TIMESTAMPTZ NULL;

-- +goose Down
ALTER TABLE delegations DROP COLUMN deadline;
