// The set-up the Slack e2e suites (test/e2e/slack-*.test.ts) share: the
// Slack Web API stand-in, wrangler dev with the Slack app on (the e2e
// settings, decision windows of a minute, the suite's signing secret and bot
// token, the stand-in's URL) plus the suite's own settings, the vitest hooks
// that start, reset (before each test: the stand-in and the demo MCP server)
// and stop them, and the suite's requests to the Worker signed and shaped as
// Slack's (test/support/slack-signing.ts), with ids unique within the suite.
import { afterAll, beforeAll, beforeEach, inject } from "vitest";
import { e2eVars } from "../e2e/global-setup";
import {
  type ButtonClick,
  blockActionsPayload,
  eventEnvelope,
  postSlackEvent,
  postSlackInteraction,
  type SignOptions,
} from "./slack-signing";
import { type SlackStandIn, startSlackStandIn } from "./slack-stand-in";
import { startWorkerServer, type WorkerServer } from "./worker-server";

export interface SlackE2eOptions {
  /** The app's signing secret (each suite its own). */
  secret: string;
  botToken: string;
  /** The app's bot user id (its installation in envelopes, the author of the messages clicked). */
  bot: string;
  /** Prefix of the suite's event ids. */
  eventIdPrefix: string;
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
  /** An event id (`<prefix><now><n>`), a Slack message timestamp, a trigger id: unique within the suite (one counter for all three). */
  eventId(): string;
  ts(): string;
  triggerId(): string;
  /** An Events API envelope from the bot's installation, in the test team unless `teamId` says another. */
  envelope(event: Record<string, unknown>, eventId: string, teamId?: string): Record<string, unknown>;
  /** POSTs to /slack/events of the suite's Worker (or `target`), signed with the suite's secret. */
  postEvent(body: unknown, options?: SignOptions, target?: WorkerServer): Promise<Response>;
  /** POSTs an interactivity payload to the suite's Worker, signed with the suite's secret. */
  postInteraction(payload: unknown, options?: SignOptions): Promise<Response>;
  /** POSTs a button click (block_actions) on a message of the bot, with a fresh trigger id. */
  click(click: Omit<ButtonClick, "triggerId" | "botUserId">): Promise<Response>;
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
  let counter = 0;
  const triggerId = () => `trigger-${++counter}`;
  const server = () => need(started.server, "Worker");
  const postInteraction = (payload: unknown, signOptions?: SignOptions) =>
    postSlackInteraction(`${server().url}/slack/interactivity`, options.secret, payload, signOptions);
  return {
    get slack() {
      return need(started.slack, "stand-in");
    },
    get server() {
      return server();
    },
    get vars() {
      return need(started.vars, "Worker's settings");
    },
    eventId: () => `${options.eventIdPrefix}${Date.now()}${++counter}`,
    ts: () => `${Math.floor(Date.now() / 1000)}.${String(++counter).padStart(6, "0")}`,
    triggerId,
    envelope: (event, eventId, teamId) => eventEnvelope(event, eventId, options.bot, teamId),
    postEvent: (body, signOptions, target = server()) => postSlackEvent(`${target.url}/slack/events`, options.secret, body, signOptions),
    postInteraction,
    click: (click) => postInteraction(blockActionsPayload({ ...click, triggerId: triggerId(), botUserId: options.bot })),
  };
}
