-- A tenant's search synonym sets, as one JSON array of {id, words, updatedAt} in id order: read
-- with the tenant row by the request gate, so a search needs no other query to apply them, and
-- written only by the synonyms requests (read, changed and written back under the row's lock).
-- MEDIUMTEXT: 500 sets of 32 words of up to 100 bytes pass TEXT's 64 KiB. A TEXT column takes
-- its default as an expression, DEFAULT ('[]'), on MariaDB 10.2 and MySQL 8.0.13 and later, so
-- a replica of the previous release, which does not write the column, goes on creating tenants.

-- +goose Up
ALTER TABLE tenants ADD COLUMN synonyms MEDIUMTEXT NOT NULL DEFAULT ('[]');

-- +goose Down
ALTER TABLE tenants DROP COLUMN synonyms;
