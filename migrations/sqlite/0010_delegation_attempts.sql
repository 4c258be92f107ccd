-- How many tries a rejected record stands for: a caller refused again for the same agent,
-- capability and reason bumps its newest record instead of adding one per try.

-- +goose Up
ALTER TABLE delegations ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1;

-- +goose Down
ALTER TABLE delegations DROP COLUMN attempts;
