-- Contract section 19.
--
-- "What you see is what you approve": the approvals listing carries `hidden`
-- as approval_requested does, the JSON Pointer and length of every value the
-- engine withheld from the arguments (JSON list `[{"path","reason","chars"}]`);
-- NULL on approvals indexed before it, which the listing then shows without
-- `hidden`.
ALTER TABLE approvals ADD COLUMN hidden_json TEXT;

-- "Persons, not credentials", on the Slack Home tab: what a user may decide is
-- judged by the same rule as their click. The run's requester's person as the
-- run object compares it (NULL: no person, or indexed before it; the
-- requester's principal is then compared alone, as the run object does), and
-- the opener's person from users.info when they opened the tab (NULL: not
-- known yet, looked up again when the tab is next published).
ALTER TABLE runs ADD COLUMN requester_person TEXT;
ALTER TABLE slack_home_openers ADD COLUMN person TEXT;
