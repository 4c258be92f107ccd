-- The registries a tenant follows, its sources (docs/federation.md), with the state of their
-- sync; cards/follow mirrors what each lists into the tenant's cards. kind is agentcards (another
-- service's tenant, followed through its change feed from feed_cursor), ai-catalog (a document at
-- url) or a2a-urls (the card URLs of urls, a JSON array; url is then ''). token_sealed is the
-- token sent to an agentcards source, sealed ('' for none); interval_seconds is how often a polled
-- source is read (0: the default). conflicts is a JSON array of the agent ids the source lists
-- whose card here is not its mirror. listed_at is when an agentcards source's cards were last
-- listed whole (they are again daily). One replica at a time syncs a source: the one whose lease
-- (lease_owner, lease_until) is current; next_sync_at is when it is next due. A removed source is
-- kept as removing until its cards are gone; storage deletes the rows with their tenant.

-- +goose Up
CREATE TABLE sources (
    tenant_id        VARCHAR(63)   COLLATE "C" NOT NULL,
    source_id        VARCHAR(64)   COLLATE "C" NOT NULL,
    kind             VARCHAR(16)   NOT NULL,
    url              VARCHAR(2048) NOT NULL DEFAULT '',
    urls             TEXT          NOT NULL,
    interval_seconds INTEGER       NOT NULL DEFAULT 0,
    token_sealed     TEXT          NOT NULL,
    feed_cursor      VARCHAR(1024) NOT NULL DEFAULT '',
    state            VARCHAR(16)   NOT NULL,
    cards            INTEGER       NOT NULL DEFAULT 0,
    conflicts        TEXT          NOT NULL,
    failures         INTEGER       NOT NULL DEFAULT 0,
    last_error       VARCHAR(300)  NOT NULL DEFAULT '',
    last_sync_at     TIMESTAMPTZ,
    listed_at        TIMESTAMPTZ,
    next_sync_at     TIMESTAMPTZ   NOT NULL,
    lease_owner      VARCHAR(64)   NOT NULL DEFAULT '',
    lease_until      TIMESTAMPTZ,
    created_at       TIMESTAMPTZ   NOT NULL,
    updated_at       TIMESTAMPTZ   NOT NULL,
    PRIMARY KEY (tenant_id, source_id),
    FOREIGN KEY (tenant_id) REFERENCES tenants (tenant_id)
);
CREATE INDEX sources_due ON sources (next_sync_at);

-- +goose Down
DROP TABLE sources;
