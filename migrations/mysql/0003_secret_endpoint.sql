-- Binds each endpoint secret to the endpoint URL it was set for: the URL is stored with the
-- sealed secret (and is part of its AES-GCM additional data), and the secret is sent only to
-- that URL. Secrets set before this migration have no URL, so none is ever sent again: set them
-- again. VARCHAR(2048), not TEXT: MySQL allows no DEFAULT on TEXT columns.

-- +goose Up
ALTER TABLE endpoint_secrets ADD COLUMN endpoint VARCHAR(2048) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE endpoint_secrets DROP COLUMN endpoint;
