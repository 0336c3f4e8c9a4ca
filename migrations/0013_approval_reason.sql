-- A decision's reason (contract section 6): the approvals listing carries it.
-- The text is already redacted and at most 1,000 characters when it is written
-- (src/execution/tool-calls.ts decideApproval); absent when none was given.
ALTER TABLE approvals ADD COLUMN reason TEXT;
