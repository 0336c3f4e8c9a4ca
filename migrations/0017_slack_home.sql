-- The Slack app's Home tab (contract section 19, "Telling the approvers"):
-- who opened it, so it is published again when what they may decide changes
-- (for those who opened it in the last 7 days), and what was last published
-- to each (its digest and when), so an unchanged list is not published again
-- and a changed one at most once per user per SLACK_HOME_REPUBLISH_MS.
CREATE TABLE slack_home_openers (
  user_id TEXT PRIMARY KEY,
  -- The opener's principal (slack:<team>:<user>) and the installation's team
  -- when they opened it: what they may decide is judged by these.
  principal TEXT NOT NULL,
  team TEXT NOT NULL,
  opened_at TEXT NOT NULL,
  published_at INTEGER,
  published_digest TEXT
);
-- The openers of the last 7 days, newest first.
CREATE INDEX slack_home_openers_recent ON slack_home_openers (opened_at);
