-- Persons, not credentials (contract sections 18-19): a named token is its
-- owner's person only when that `access:` user created it for themselves
-- (`owned_by_creator: true` in the listing). 0 for every token made before
-- this version: an owner named by someone else proves nothing.
ALTER TABLE api_tokens ADD COLUMN owned_by_creator INTEGER NOT NULL DEFAULT 0;
