-- A tenant's search synonym sets, as one JSON array of {id, words, updatedAt} in id order: read
-- with the tenant row by the request gate, so a search needs no other query to apply them, and
-- written only by the synonyms requests (read, changed and written back under the row's lock).

-- +goose Up
ALTER TABLE tenants ADD COLUMN synonyms TEXT NOT NULL DEFAULT '[]';

-- +goose Down
ALTER TABLE tenants DROP COLUMN synonyms;
