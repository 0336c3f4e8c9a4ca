// Slack thread follow-ups (contract section 14), in D1 (migrations/0007): the
// latest run the app started in each thread. The intake reads it to hand a
// new run its predecessor (whose object keeps the thread's turns for as long
// as it keeps its events) and writes the new run once it started.
export interface ThreadKey {
  channel_id: string;
  thread_ts: string;
}

export async function latestRunInThread(db: D1Database, thread: ThreadKey): Promise<string | null> {
  const row = await db
    .prepare(`SELECT latest_run_id FROM slack_threads WHERE channel_id = ? AND thread_ts = ?`)
    .bind(thread.channel_id, thread.thread_ts)
    .first<{ latest_run_id: string }>();
  return row?.latest_run_id ?? null;
}

export async function recordThreadRun(db: D1Database, thread: ThreadKey, runId: string, at: Date): Promise<void> {
  await db
    .prepare(
      `INSERT INTO slack_threads (channel_id, thread_ts, latest_run_id, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (channel_id, thread_ts) DO UPDATE SET latest_run_id = excluded.latest_run_id, updated_at = excluded.updated_at`,
    )
    .bind(thread.channel_id, thread.thread_ts, runId, at.toISOString())
    .run();
}
