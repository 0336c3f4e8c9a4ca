// The set-up the Slack e2e suites (test/e2e/slack-*.test.ts) share: the
// Slack Web API stand-in, wrangler dev with the Slack app on (the e2e
// settings, decision windows of a minute, the suite's signing secret and bot
// token, the stand-in's URL) plus the suite's own settings, the vitest hooks
// that start, reset (before each test: the stand-in and the demo MCP server)
// and stop them, and the ids a suite's requests carry as Slack's would.
import { afterAll, beforeAll, beforeEach, inject } from "vitest";
import { e2eVars } from "../e2e/global-setup";
import { type SlackStandIn, startSlackStandIn } from "./slack-stand-in";
import { startWorkerServer, type WorkerServer } from "./worker-server";

export interface SlackE2eOptions {
  /** The app's signing secret (each suite its own). */
  secret: string;
  botToken: string;
  /** The team the stand-in's auth.test names (default the stand-in's own). */
  standInTeamId?: string;
  /**
   * The suite's settings over the Slack app's (`base`: the e2e settings, the
   * decision windows, SLACK_SIGNING_SECRET, SLACK_BOT_TOKEN, SLACK_API_BASE_URL).
   * Called in beforeAll after the suite's own earlier beforeAll hooks, so it may
   * name servers they started.
   */
  vars: (base: Record<string, string>) => Record<string, string>;
  /** The start hook's timeout; default the project's hookTimeout. */
  startTimeoutMs?: number;
}

/** What the hooks started; read it inside tests and hooks (it is filled by beforeAll). */
export interface SlackE2e {
  readonly slack: SlackStandIn;
  readonly server: WorkerServer;
  /** The settings the Worker started with (to start another one beside it). */
  readonly vars: Record<string, string>;
}

/** Registers the suite's hooks (call it at the top level of the test file, after any beforeAll whose servers `vars` names). */
export function useSlackE2e(options: SlackE2eOptions): SlackE2e {
  const demoBase = inject("demoMcpBaseUrl");
  const started: { slack?: SlackStandIn; server?: WorkerServer; vars?: Record<string, string> } = {};
  beforeAll(async () => {
    const slack = await startSlackStandIn({
      botToken: options.botToken,
      quiet: true,
      ...(options.standInTeamId === undefined ? {} : { teamId: options.standInTeamId }),
    });
    started.slack = slack;
    const base = {
      ...e2eVars(`${demoBase}/mcp`),
      APPROVAL_TIMEOUT_MS: "60000",
      ADMISSION_TIMEOUT_MS: "60000",
      SLACK_SIGNING_SECRET: options.secret,
      SLACK_BOT_TOKEN: options.botToken,
      SLACK_API_BASE_URL: slack.apiBaseUrl,
    };
    started.vars = { ...base, ...options.vars(base) };
    started.server = await startWorkerServer(started.vars);
  }, options.startTimeoutMs);

  afterAll(async () => {
    await started.server?.stop();
    await started.slack?.stop();
  });

  beforeEach(async () => {
    started.slack?.reset();
    await fetch(`${demoBase}/control/reset`, { method: "POST" });
  });

  const need = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`the Slack e2e ${what} is not started: read it inside a test or hook`);
    return value;
  };
  return {
    get slack() {
      return need(started.slack, "stand-in");
    },
    get server() {
      return need(started.server, "Worker");
    },
    get vars() {
      return need(started.vars, "Worker's settings");
    },
  };
}

/** Event ids (`<prefix><now><n>`), Slack message timestamps and trigger ids, unique within a suite (one counter for all three). */
export function slackIds(eventIdPrefix: string): { eventId(): string; ts(): string; triggerId(): string } {
  let counter = 0;
  return {
    eventId: () => `${eventIdPrefix}${Date.now()}${++counter}`,
    ts: () => `${Math.floor(Date.now() / 1000)}.${String(++counter).padStart(6, "0")}`,
    triggerId: () => `trigger-${++counter}`,
  };
}
