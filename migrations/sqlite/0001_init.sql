-- Initial schema, SQLite flavour. The three dialects must behave identically; the comments say
-- why each type was chosen.
--
-- Why these types: SQLite ignores declared lengths, so VARCHAR(n) only documents the bound the
-- other dialects enforce (the domain validates lengths before anything reaches here). TEXT
-- compares with the BINARY collation (memcmp), so ids are case-sensitive and ORDER BY agent_id
-- is byte order, the reference the Postgres and MySQL files reproduce. Timestamps are declared
-- DATETIME because that declared type is what makes mattn/go-sqlite3 parse the text GORM wrote
-- back into a time.Time.

-- +goose Up
CREATE TABLE tenants (
    tenant_id  VARCHAR(63)  NOT NULL PRIMARY KEY,
    name       VARCHAR(200) NOT NULL,
    status     VARCHAR(16)  NOT NULL CHECK (status IN ('active', 'suspended')),
    created_at DATETIME     NOT NULL,
    updated_at DATETIME     NOT NULL
);

-- One JSON document per card plus the columns queries need. The foreign key keeps a card that
-- races with the deletion of its tenant from surviving into a tenant later created with the same
-- id (the connection turns foreign keys on with _foreign_keys=on).
CREATE TABLE cards (
    tenant_id  VARCHAR(63)  NOT NULL REFERENCES tenants (tenant_id),
    agent_id   VARCHAR(128) NOT NULL,
    id         VARCHAR(36)  NOT NULL,
    name       VARCHAR(200) NOT NULL,
    revision   BIGINT       NOT NULL,
    doc        TEXT         NOT NULL,
    created_at DATETIME     NOT NULL,
    updated_at DATETIME     NOT NULL,
    PRIMARY KEY (tenant_id, agent_id)
);

-- The change feed. AUTOINCREMENT (not just INTEGER PRIMARY KEY) guarantees a seq is never
-- reused, even after the rows with the highest seq were deleted with their tenant, so a follower
-- that remembers the last seq it saw never misses a change. No foreign key: the 'purge' row of
-- a deleted tenant outlives the tenant by design.
CREATE TABLE card_changes (
    seq        INTEGER      PRIMARY KEY AUTOINCREMENT,
    tenant_id  VARCHAR(63)  NOT NULL,
    agent_id   VARCHAR(128) NOT NULL,
    op         VARCHAR(16)  NOT NULL CHECK (op IN ('create', 'update', 'delete', 'purge')),
    revision   BIGINT       NOT NULL,
    changed_at DATETIME     NOT NULL
);
CREATE INDEX card_changes_tenant_seq ON card_changes (tenant_id, seq);

-- casbin rules. rule_key is the hex SHA-256 of ptype and v0..v5: a unique key over six 255-char
-- columns would exceed MySQL's index length limit, so all dialects use the hash for dedupe.
-- Values default to '' (never NULL) so the key and equality filters treat "absent" one way.
CREATE TABLE casbin_rules (
    id        INTEGER      PRIMARY KEY AUTOINCREMENT,
    tenant_id VARCHAR(63)  NOT NULL REFERENCES tenants (tenant_id),
    ptype     VARCHAR(8)   NOT NULL,
    v0        VARCHAR(255) NOT NULL DEFAULT '',
    v1        VARCHAR(255) NOT NULL DEFAULT '',
    v2        VARCHAR(255) NOT NULL DEFAULT '',
    v3        VARCHAR(255) NOT NULL DEFAULT '',
    v4        VARCHAR(255) NOT NULL DEFAULT '',
    v5        VARCHAR(255) NOT NULL DEFAULT '',
    rule_key  CHAR(64)     NOT NULL,
    UNIQUE (tenant_id, rule_key)
);

-- +goose Down
DROP TABLE casbin_rules;
DROP TABLE card_changes;
DROP TABLE cards;
DROP TABLE tenants;
