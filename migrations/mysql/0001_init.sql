-- Initial schema, MySQL/MariaDB flavour. The three dialects must behave identically; the
-- comments say why each type was chosen.
--
-- Why utf8mb4 with utf8mb4_bin on every table: utf8mb4 stores any Unicode text (MySQL's "utf8"
-- is 3-byte only), and the default collation (utf8mb4_0900_ai_ci / utf8mb4_general_ci) is case-
-- and accent-insensitive, which would make the agents "Agent" and "agent" collide on the primary
-- key and sort "a" before "B". utf8mb4_bin compares code points, i.e. UTF-8 byte order, as
-- SQLite's BINARY and Postgres' "C" do. (It is a PAD SPACE collation; ids cannot contain spaces,
-- and casbin rules are deduplicated by rule_key, so trailing spaces cannot collide.)
-- Why DATETIME(6): microsecond precision like TIMESTAMPTZ, without TIMESTAMP's 2038 limit and
-- session-time-zone conversion; the driver is configured with loc=UTC, so values are UTC.
-- Why InnoDB: transactions, row locks and foreign keys.

-- +goose Up
CREATE TABLE tenants (
    tenant_id  VARCHAR(63)  NOT NULL PRIMARY KEY,
    name       VARCHAR(200) NOT NULL,
    status     VARCHAR(16)  NOT NULL CHECK (status IN ('active', 'suspended')),
    created_at DATETIME(6)  NOT NULL,
    updated_at DATETIME(6)  NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- One JSON document per card plus the columns queries need. doc is MEDIUMTEXT because TEXT holds
-- only 64 KiB and a document may be 256 KiB. The foreign key keeps a card that races with the
-- deletion of its tenant from surviving into a tenant later created with the same id.
CREATE TABLE cards (
    tenant_id  VARCHAR(63)  NOT NULL,
    agent_id   VARCHAR(128) NOT NULL,
    id         VARCHAR(36)  NOT NULL,
    name       VARCHAR(200) NOT NULL,
    revision   BIGINT       NOT NULL,
    doc        MEDIUMTEXT   NOT NULL,
    created_at DATETIME(6)  NOT NULL,
    updated_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (tenant_id, agent_id),
    CONSTRAINT cards_tenant_fk FOREIGN KEY (tenant_id) REFERENCES tenants (tenant_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The change feed. InnoDB persists the AUTO_INCREMENT counter (MySQL 8, MariaDB 10.2.4+), and a
-- tenant deletion always appends its 'purge' row last, so a seq is never handed out twice. No
-- foreign key: the 'purge' row of a deleted tenant outlives the tenant by design.
CREATE TABLE card_changes (
    seq        BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    tenant_id  VARCHAR(63)  NOT NULL,
    agent_id   VARCHAR(128) NOT NULL,
    op         VARCHAR(16)  NOT NULL CHECK (op IN ('create', 'update', 'delete', 'purge')),
    revision   BIGINT       NOT NULL,
    changed_at DATETIME(6)  NOT NULL,
    INDEX card_changes_tenant_seq (tenant_id, seq)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- casbin rules. rule_key is the hex SHA-256 of ptype and v0..v5: a unique key over six
-- VARCHAR(255) utf8mb4 columns (6 x 1020 bytes) would exceed InnoDB's 3072-byte index limit.
-- Values default to '' (never NULL) so the key and equality filters treat "absent" one way.
CREATE TABLE casbin_rules (
    id        BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    tenant_id VARCHAR(63)  NOT NULL,
    ptype     VARCHAR(8)   NOT NULL,
    v0        VARCHAR(255) NOT NULL DEFAULT '',
    v1        VARCHAR(255) NOT NULL DEFAULT '',
    v2        VARCHAR(255) NOT NULL DEFAULT '',
    v3        VARCHAR(255) NOT NULL DEFAULT '',
    v4        VARCHAR(255) NOT NULL DEFAULT '',
    v5        VARCHAR(255) NOT NULL DEFAULT '',
    rule_key  CHAR(64)     NOT NULL,
    UNIQUE KEY casbin_rules_tenant_key (tenant_id, rule_key),
    CONSTRAINT casbin_rules_tenant_fk FOREIGN KEY (tenant_id) REFERENCES tenants (tenant_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- +goose Down
DROP TABLE casbin_rules;
DROP TABLE card_changes;
DROP TABLE cards;
DROP TABLE tenants;
