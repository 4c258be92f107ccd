-- Policy revisions, delegation records and endpoint secrets, SQLite flavour (see 0001 for the
-- choice of types).
--
-- policy_revision is bumped in the transaction of every rule change of the tenant. The tenant
-- gate reads the tenant row on every request anyway, so each replica compares it with the
-- revision its cached casbin enforcer was loaded at and reloads when it moved: a revoked grant is
-- refused on the very next request on every replica, with no feed to follow.

-- +goose Up
ALTER TABLE tenants ADD COLUMN policy_revision BIGINT NOT NULL DEFAULT 0;

-- One row per delegation. id is a UUIDv7, so ordering by id is ordering by creation time, which
-- is what cursor paging needs. callback_hash is the hex SHA-256 of the callback token ('' when
-- the delegation has no callback): the token itself is never stored.
CREATE TABLE delegations (
    tenant_id     VARCHAR(63)  NOT NULL REFERENCES tenants (tenant_id),
    id            VARCHAR(36)  NOT NULL,
    caller        VARCHAR(255) NOT NULL,
    agent_id      VARCHAR(128) NOT NULL,
    capability    VARCHAR(128) NOT NULL,
    mode          VARCHAR(8)   NOT NULL,
    transport     VARCHAR(8)   NOT NULL,
    depth         INTEGER      NOT NULL,
    status        VARCHAR(16)  NOT NULL CHECK (status IN ('pending', 'running', 'accepted', 'completed', 'failed', 'timeout', 'rejected')),
    callback_hash CHAR(64)     NOT NULL DEFAULT '',
    result        TEXT         NOT NULL DEFAULT '',
    error         TEXT         NOT NULL DEFAULT '',
    latency_ms    BIGINT       NOT NULL DEFAULT 0,
    created_at    DATETIME     NOT NULL,
    updated_at    DATETIME     NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX delegations_tenant_caller ON delegations (tenant_id, caller, id);

-- The static secret of an agent's endpoint, AES-GCM sealed with a key from config (nonce
-- prepended), base64. Kept apart from the card document so no card API can ever return it.
CREATE TABLE endpoint_secrets (
    tenant_id  VARCHAR(63)  NOT NULL REFERENCES tenants (tenant_id),
    agent_id   VARCHAR(128) NOT NULL,
    sealed     TEXT         NOT NULL,
    updated_at DATETIME     NOT NULL,
    PRIMARY KEY (tenant_id, agent_id)
);

-- +goose Down
DROP TABLE endpoint_secrets;
DROP TABLE delegations;
ALTER TABLE tenants DROP COLUMN policy_revision;
