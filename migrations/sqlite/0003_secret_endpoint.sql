-- Binds each endpoint secret to the endpoint URL it was set for: the URL is stored with the
-- sealed secret (and is part of its AES-GCM additional data), and the secret is sent only to
-- that URL. Secrets set before this migration have no URL, so none is ever sent again: set them
-- again.

-- +goose Up
ALTER TABLE endpoint_secrets ADD COLUMN endpoint TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE endpoint_secrets DROP COLUMN endpoint;
