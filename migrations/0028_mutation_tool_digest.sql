-- Contract section 23 (tool identity): the row keeps the `tool_digest` its
-- approval was bound to, `sha256:` and the hex SHA-256 of the RFC 8785 form of
-- the tool as its server listed it when the call was proposed. NULL on rows
-- written before, and for a tool its server did not list.
ALTER TABLE mutation_outcomes ADD COLUMN tool_digest TEXT;
