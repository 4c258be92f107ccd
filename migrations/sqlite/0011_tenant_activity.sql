-- When each tenant was last searched (written at most once a minute per tenant and replica): a
-- replica starting up builds the search indexes of the tenants searched recently in the
-- background, so their first search does not wait for a build.

-- +goose Up
CREATE TABLE tenant_activity (
    tenant_id   VARCHAR(63) NOT NULL PRIMARY KEY,
    searched_at DATETIME NOT NULL
);

-- +goose Down
DROP TABLE tenant_activity;
