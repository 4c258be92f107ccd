-- The last revision of each agent id whose card was deleted, so that a card registered again under
-- the id continues from it: an agent id's revisions, and so its ETags, never repeat, and an
-- If-Match or If-None-Match taken from a deleted card never matches the card that replaced it.
-- Written by every delete; on Postgres and MySQL also taken (at revision 0 when new) by every
-- create, which locks it there first, as a delete does, so that a create racing a delete of the
-- same id waits for it. No foreign key: the rows go with their tenant in the transaction that
-- deletes it.

-- +goose Up
CREATE TABLE card_tombstones (
    tenant_id VARCHAR(63)  NOT NULL,
    agent_id  VARCHAR(128) NOT NULL,
    revision  BIGINT       NOT NULL,
    PRIMARY KEY (tenant_id, agent_id)
);

-- +goose Down
DROP TABLE card_tombstones;
