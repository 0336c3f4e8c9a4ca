// Phase 3, replay: REPLAY_EVENTS events of one ended run read with
// events?after=0 to the end of the response, after a warm-up read.
import { type Client, percentile } from "../http-client";
import { REPLAY_APPEND_BATCH_EVENTS, REPLAY_EVENTS, REPLAY_REPEATS } from "../settings";
import { createRun, engine } from "../targets";

export interface Replay {
  medianMs: number;
  minMs: number;
  maxMs: number;
  firstByteMedianMs: number;
  bytes: number;
}

function verifyReplay(text: string): void {
  const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  const contiguous = ids.every((id, i) => id === i + 1);
  const lastEvent = /event: (\w+)\ndata: [^\n]*\n\n$/.exec(text)?.[1];
  if (ids.length !== REPLAY_EVENTS || !contiguous || lastEvent !== "run_failed") {
    throw new Error(`replay: ${ids.length} frames (want ${REPLAY_EVENTS}), contiguous=${contiguous}, last=${lastEvent}`);
  }
}

/** Builds the 10,000-event ended run once; each path replays it. */
export async function prepareReplayRun(client: Client): Promise<string> {
  const id = await createRun(client);
  // run_started is 1 and the cancel's run_failed will be the last.
  const synthetic = REPLAY_EVENTS - 2;
  for (let sent = 0; sent < synthetic; sent += REPLAY_APPEND_BATCH_EVENTS) {
    await engine.append(client, id, Math.min(REPLAY_APPEND_BATCH_EVENTS, synthetic - sent), "r");
  }
  await engine.finish(client, id);
  const summary = await client.engine.summary(id);
  if (summary.last_sequence !== REPLAY_EVENTS || summary.earliest_sequence !== 1 || summary.status !== "failed") {
    throw new Error(`replay run not as planned: ${JSON.stringify(summary)}`);
  }
  return id;
}

export async function replayPhase(client: Client, id: string): Promise<Replay> {
  const path = `/api/runs/${id}/events?after=0`;
  verifyReplay((await client.readAll(path)).text); // warm-up, and proof the replay is complete
  const totals: number[] = [];
  const firstBytes: number[] = [];
  let bytes = 0;
  for (let i = 0; i < REPLAY_REPEATS; i++) {
    const read = await client.readAll(path);
    verifyReplay(read.text);
    totals.push(read.totalMs);
    firstBytes.push(read.firstByteMs);
    bytes = Buffer.byteLength(read.text);
  }
  totals.sort((a, b) => a - b);
  firstBytes.sort((a, b) => a - b);
  return {
    medianMs: percentile(totals, 50),
    minMs: totals[0]!,
    maxMs: totals[totals.length - 1]!,
    firstByteMedianMs: percentile(firstBytes, 50),
    bytes,
  };
}
