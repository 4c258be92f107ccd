-- The audit trail: one row per committed write (tenants, cards, endpoint secrets, roles,
-- policies, delegation records), appended in the write's own transaction, and one per write
-- refused by policy (outcome 'denied'; the same refusal again within the hour counts into
-- attempts). No foreign key: a deleted tenant's trail outlives it until audit.retention, under
-- tenant_id '<id>/<deletion time in Unix microseconds>' (no tenant id has a '/'), so that a
-- tenant created again under the id starts with an empty trail. Rows older than
-- audit.retention are pruned in the background (audit_written_at).

-- +goose Up
CREATE TABLE audit_entries (
    seq             BIGINT        GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id       VARCHAR(96)   COLLATE "C" NOT NULL,
    written_at      TIMESTAMPTZ   NOT NULL,
    principal       VARCHAR(300)  COLLATE "C" NOT NULL,
    request_id      VARCHAR(64)   NOT NULL DEFAULT '',
    action          VARCHAR(64)   COLLATE "C" NOT NULL,
    object          VARCHAR(300)  COLLATE "C" NOT NULL,
    detail          VARCHAR(1024) NOT NULL DEFAULT '',
    revision_before BIGINT        NOT NULL DEFAULT 0,
    revision_after  BIGINT        NOT NULL DEFAULT 0,
    outcome         VARCHAR(16)   NOT NULL,
    attempts        INTEGER       NOT NULL DEFAULT 1
);
CREATE INDEX audit_tenant_seq ON audit_entries (tenant_id, seq);
CREATE INDEX audit_tenant_object ON audit_entries (tenant_id, object, seq);
CREATE INDEX audit_written_at ON audit_entries (written_at);

-- +goose Down
DROP TABLE audit_entries;
