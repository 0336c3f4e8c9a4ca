// POST /slack/events and POST /slack/interactivity (contract section 14): the
// Worker side of the Slack app, on slack-edge (verification, payload types,
// routing) and slack-web-api-client (every Web API call, to
// SLACK_API_BASE_URL). Verified events start runs through the same startRun
// as POST /api/trigger; clicks and modal submissions decide through the
// RunObject's RPC. Refusals are JSON, never slack-edge's plain text. The
// app is built once per isolate (slackApp) and the signature is checked once,
// here, before the body is read; each request's settings, client and scope
// reach the shared app's listeners as its turn (an AsyncLocalStorage).
import { AsyncLocalStorage } from "node:async_hooks";
import { publishHomeNow, recordHomeOpened } from "./home-publish";
import { type Authorize, SlackApp, type SlackEdgeAppEnv, verifySlackRequest } from "slack-edge";
import type { SlackAPIClient } from "slack-web-api-client";
import type { RunSummary, StartRunInput } from "../agent/run-record";
import { type HostConfig, loadConfig } from "../config/config";
import type { Env } from "../config/env";
import { type Decider, mayAnswerAsk } from "../policy/approval-policy";
import { slackPersonOf } from "./slack-persons";
import { emailTrustedTeams } from "../policy/persons";
import { errorJson } from "../base/api-error";
import { runStubFor, startRun } from "../http/start-run";
import { isRunId, newRunId } from "../ids";
import {
  ACTION_APPROVE,
  ACTION_DENY,
  ACTION_INPUT_ANSWER,
  answerInputModal,
  CONFIRMATION_MISMATCH_TEXT,
  confirmApprovalModal,
  MODAL_INPUT_ACTION_ID,
  MODAL_INPUT_BLOCK_ID,
  VIEW_CONFIRM_APPROVAL,
  VIEW_INPUT_ANSWER,
} from "./blocks";
import { intakeEvent } from "./event-intake";
import {
  decisionReplyText,
  encodeModalMetadata,
  FORM_NOT_SHOWN_TEXT,
  GONE_TEXT,
  isConfirmationMismatch,
  parseApprovalValue,
  parseInputValue,
  parseModalMetadata,
  policyRefusalText,
  refusalText,
  approvalDeciders,
  answerDeciders,
  STALE_TEXT,
} from "./interactions";
import { failureText, lazyFailureLogged, SLACK_LIBRARY_LOG_LEVEL } from "./library-logging";
import { classifySlackRequest, type SlackRoute } from "./request-envelope";
import type { SlackText } from "./slack-text";
import { recordStop } from "./stop-posting";
import { latestRunInThread, recordThreadRun } from "./threads";
import { createSlackClient } from "./web-api";
import { type InstallSettings, installSettingsOf } from "./install-settings";
import { InstallationStore, type ServedInstallation } from "./installation-store";
import { refreshDue, refreshInstallation } from "./installation-tokens";
import { eventOrigin, interactionOrigin } from "./install-flow";
import { installationTeam } from "./installation-team";
import { EXTERNAL_USER_TEXT, haltedTriggerText, rateLimitedText } from "./guard-replies";
import { readActiveHalts, readHaltsAndPolicy } from "../outcomes/halts";
import { coveringHalt } from "../policy/halt-scope";
import { approverPrincipals, slackRequester, slackUserOf } from "./slack-principal";
import { eventTeams, interactionTeams, scopeOf } from "./team-scope";
import { countTriggerRetryAfter } from "../auth/rate-limits";
import { getDelivery, slackNamespace } from "../http/deliveries";
import { logger } from "../operate/logger";
import type { ActionVerdict, PersonAction } from "../wire/run-protocol";
import { formFields, readForm } from "../client/requested-form";
import { ACTION_INPUT_DECLINE, enteredValues, modalErrors, questionFormModal, VIEW_INPUT_FORM } from "./question-form";
import { answerFormQuestion, type FormAnswer, formReplyText, formVerdictErrors, pendingFormQuestion } from "./question-answers";

/** An action as a surface builds it before the actor is known. */
type WithoutActor<T> = T extends unknown ? Omit<T, "actor"> : never;
/** Slack's own window: a request timestamp further than this from now (past or future) is refused. */
const SIGNATURE_MAX_AGE_SECONDS = 300;
/** Slack waits 3 s for an answer; the run's start (a D1 insert and one RPC) is awaited at most this long before acking anyway. */
const START_ACK_BUDGET_MS = 2_000;
/** Slack's payloads are small; anything larger is not from Slack. */
const SLACK_BODY_MAX_BYTES = 64 * 1024;
type SlackOnConfig = HostConfig & { SLACK_SIGNING_SECRET: string; SLACK_BOT_TOKEN: string };

export async function handleSlackRequest(request: Request, env: Env, ctx: ExecutionContext, route: SlackRoute): Promise<Response> {
  const loaded = loadConfig(env);
  if (loaded.state === "bad_config") {
    // Anonymous callers learn nothing about which setting is wrong (contract section 13).
    return errorJson(503, { error: "bad_config", message: "The host configuration is invalid; see the deployment's settings." });
  }
  const config = loaded.config;
  // Contract section 26: with installations, the bot token, team and bot user are the request's installation's.
  const install = installSettingsOf(config);
  const signingSecret = config.SLACK_SIGNING_SECRET;
  if (signingSecret === undefined || (install === null && config.SLACK_BOT_TOKEN === undefined)) {
    return errorJson(503, {
      error: "not_configured",
      message: "The Slack app is off: set SLACK_SIGNING_SECRET and SLACK_BOT_TOKEN (wrangler secret put) to turn it on.",
    });
  }

  const rawBody = await readBoundedText(request);
  if (rawBody === null)
    return errorJson(413, { error: "payload_too_large", message: `Slack requests are at most ${SLACK_BODY_MAX_BYTES} bytes.` });
  if (!(await isVerified(request.headers, rawBody, signingSecret))) {
    return errorJson(401, {
      error: "unauthorized",
      message: "The request is not signed by Slack with this app's signing secret, or is too old.",
    });
  }

  // Verified, so the body is Slack's: unparseable is a 400, a shape or type no listener takes is acknowledged here.
  const envelope = classifySlackRequest(route, request.headers.get("content-type") ?? "", rawBody);
  if (envelope.kind === "bad_request") return errorJson(400, { error: "bad_request", message: envelope.message });
  if (envelope.kind === "acknowledge") return new Response("", { status: 200 });

  let slack: SlackOnConfig;
  let installationId: string | undefined;
  if (install === null) {
    slack = { ...config, SLACK_SIGNING_SECRET: signingSecret, SLACK_BOT_TOKEN: config.SLACK_BOT_TOKEN ?? "" };
  } else if (envelope.type === "url_verification") {
    slack = { ...config, SLACK_SIGNING_SECRET: signingSecret, SLACK_BOT_TOKEN: "" };
  } else {
    const served = await servedInstallation(env, ctx, install, route, envelope.body);
    if (served === null) {
      logger.info("slack: a request of no installation was acknowledged and ignored", { type: envelope.type });
      return new Response("", { status: 200 });
    }
    installationId = served.installation_id;
    slack = {
      ...config,
      SLACK_SIGNING_SECRET: signingSecret,
      SLACK_BOT_TOKEN: served.bot_token,
      // Section 19's team scope per installation: its enterprise on Grid, else its workspace; its own bot user.
      SLACK_TEAM_ID: served.enterprise_id ?? served.team_id ?? served.installation_id,
      SLACK_BOT_USER_ID: served.bot_user_id,
    };
  }

  // Contract section 19: only the installation's team, and (unless allowed) only its own users, start or decide.
  const client = createSlackClient(slack);
  let scope: InstallationScope = { team: "", principal: undefined };
  if (envelope.type !== "url_verification") {
    const team = await installationTeam(slack, () => client.auth.test());
    if (team === null) {
      logger.warn(
        "slack: the installation's team is not known yet (SLACK_TEAM_ID unset, auth.test unanswered); acknowledged, nothing done",
      );
      return new Response("", { status: 200 });
    }
    const teams = route === "events" ? eventTeams(envelope.body) : interactionTeams(envelope.body);
    const verdict = scopeOf(teams, team, slack.SLACK_ALLOW_EXTERNAL_USERS);
    if (verdict.kind === "foreign_team") {
      logger.info("slack: a request from another team was acknowledged and ignored", { type: envelope.type });
      return new Response("", { status: 200 });
    }
    if (verdict.kind === "external_user") {
      logger.info("slack: a user from another organisation was refused", { type: envelope.type });
      if (envelope.type === "block_actions") {
        const where = clickPlace(envelope.body);
        if (where) ctx.waitUntil(ephemeral(client, where, verdict.user, EXTERNAL_USER_TEXT));
      }
      return new Response("", { status: 200 });
    }
    scope = { team, principal: verdict.principal };
  }

  // Promises the events route waits for (bounded) before acknowledging: the run's start.
  const starts: Promise<unknown>[] = [];
  const turn = slackTurn({
    env,
    config: slack,
    ctx,
    starts,
    client,
    scope,
    origin: new URL(request.url).origin,
    ...(installationId === undefined ? {} : { installation_id: installationId }),
  });
  const forwarded = new Request(request.url, { method: "POST", headers: request.headers, body: rawBody });
  let response: Response;
  try {
    response = await turns.run(turn, () =>
      slackApp().run(forwarded, {
        waitUntil: (promise: Promise<unknown>) => ctx.waitUntil(lazyFailureLogged(promise)),
        passThroughOnException: () => ctx.passThroughOnException(),
        props: undefined,
      } as ExecutionContext),
    );
  } catch (err) {
    // A run that could not be started is answered below (Slack retries it); anything else thrown by a
    // payload the envelope check let through is acknowledged, so Slack does not retry it. The log names
    // the error's type only: its message may quote the payload.
    if (starts.length === 0) {
      logger.warn("slack: a verified payload could not be handled", { error: failureText(err) });
      return new Response("", { status: 200 });
    }
    response = new Response("", { status: 200 });
  }

  if (route === "events" && starts.length > 0) {
    const outcome = await Promise.race([
      Promise.all(starts).then(() => "started" as const),
      new Promise<"slow">((r) => setTimeout(() => r("slow"), START_ACK_BUDGET_MS)),
    ]).catch((err: unknown) => err);
    if (outcome !== "started" && outcome !== "slow") {
      // Not acknowledged, so Slack retries; the delivery id (event_id) keeps a retry from starting a second run.
      logger.error("slack: starting a run failed", { error: failureText(outcome) });
      return errorJson(500, { error: "internal_error", message: "The run could not be started; Slack will retry this event." });
    }
  }
  // A verified request no listener took (a payload type this app does not use): acknowledge it so Slack does not retry.
  if (response.status === 404) return new Response("", { status: 200 });
  return response;
}

/**
 * The installation serving a verified request (contract section 26): the workspace's own install, else
 * its organisation's org-wide one; null for none. A token due for rotation is refreshed in the
 * background (under its lease): the current one still works for up to 2 hours.
 */
async function servedInstallation(
  env: Env,
  ctx: ExecutionContext,
  install: InstallSettings,
  route: SlackRoute,
  body: unknown,
): Promise<ServedInstallation | null> {
  const origin = route === "events" ? eventOrigin(body) : interactionOrigin(body);
  const store = new InstallationStore(env.DB, install.keys);
  const served = await store.forRequest(origin.team, origin.enterprise);
  if (served !== null && refreshDue(served.token_expires_at, Date.now())) {
    ctx.waitUntil(
      refreshInstallation(store, install, served.installation_id).catch((err: unknown) =>
        logger.warn("slack: a token refresh failed", { installation: served.installation_id, error: failureText(err) }),
      ),
    );
  }
  return served;
}

async function readBoundedText(request: Request): Promise<string | null> {
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > SLACK_BODY_MAX_BYTES) return null;
  const bytes = await request.arrayBuffer();
  return bytes.byteLength > SLACK_BODY_MAX_BYTES ? null : new TextDecoder().decode(bytes);
}

/**
 * The one check of Slack's v0 signature per request (the shared app does not check it
 * again), by slack-edge's verifySlackRequest (HMAC-SHA256
 * with crypto.subtle.verify, constant time). Two checks it leaves out are
 * added here: a timestamp too far in the future (it only refuses old ones),
 * and a malformed signature header (its hex parser would throw on one).
 */
async function isVerified(headers: Headers, rawBody: string, signingSecret: string): Promise<boolean> {
  const timestamp = headers.get("x-slack-request-timestamp") ?? "";
  const signature = headers.get("x-slack-signature") ?? "";
  if (!/^\d{1,12}$/.test(timestamp) || !/^v0=[0-9a-f]{64}$/.test(signature)) return false;
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > SIGNATURE_MAX_AGE_SECONDS) return false;
  return verifySlackRequest(signingSecret, headers, rawBody);
}

/** The installation's team, and the acting user's principal when the request names one (both checked by scopeOf). */
interface InstallationScope {
  team: string;
  principal: string | undefined;
}

/**
 * One Slack request as the listeners see it: the Worker's bindings and context, the Slack
 * settings, the Web API client, the installation's scope, and the run starts the events
 * route waits for. The app is shared by every request of the isolate; this is not.
 */
interface SlackTurn {
  env: Env;
  config: SlackOnConfig;
  ctx: ExecutionContext;
  /** Promises the events route waits for (bounded) before acknowledging: the run's start. */
  starts: Promise<unknown>[];
  client: SlackAPIClient;
  scope: InstallationScope;
  /** The one Slack's request came to (console links from Slack, when PUBLIC_URL is unset). */
  origin: string;
  /** With installations (contract section 26): the installation serving this request. */
  installation_id?: string;
  /** Contract section 19: only these teams' verified emails join an access: person. */
  trusted: ReturnType<typeof emailTrustedTeams>;
  /** The acting user as a principal (`slack:<team>:<user>`, contract section 18); "" when the request names none. */
  actor: string;
  /** SLACK_APPROVERS as principals of the installation's team. */
  approvers: string[];
}

/** The request being handled, for the listeners of the one shared app (run through `turns.run`, so lazy listeners keep it). */
const turns = new AsyncLocalStorage<SlackTurn>();

function currentTurn(): SlackTurn {
  const turn = turns.getStore();
  if (turn === undefined) throw new Error("slack: a listener ran outside a verified request");
  return turn;
}

function slackTurn(fields: Omit<SlackTurn, "trusted" | "actor" | "approvers">): SlackTurn {
  return {
    ...fields,
    // Contract section 13: with installations no team's emails are trusted unless SLACK_EMAIL_TRUSTED_TEAMS names it.
    trusted: emailTrustedTeams(fields.config.SLACK_EMAIL_TRUSTED_TEAMS, fields.installation_id === undefined ? fields.scope.team : null),
    actor: fields.scope.principal ?? "",
    approvers: approverPrincipals(fields.config.SLACK_APPROVERS, fields.scope.team),
  };
}

let sharedApp: SlackApp<SlackEdgeAppEnv> | undefined;

/**
 * The Slack app, built once per isolate on first use. It depends on no setting: the bot
 * token, the team and every other setting come with each request's turn. Signatures are
 * checked once, by handleSlackRequest (isVerified) before anything is read: `socketMode: true`
 * is slack-edge's switch for requests whose transport is already trusted, so it neither
 * checks the signature again nor needs the signing secret. Our own `authorize` replaces
 * slack-edge's default, which calls auth.test on slack.com per request.
 */
function slackApp(): SlackApp<SlackEdgeAppEnv> {
  sharedApp ??= buildApp();
  return sharedApp;
}

function buildApp(): SlackApp<SlackEdgeAppEnv> {
  // The bot token from config, the bot user id from the event's authorizations (else SLACK_BOT_USER_ID).
  const authorize: Authorize<SlackEdgeAppEnv> = async (req) => {
    const { config } = currentTurn();
    return {
      botToken: config.SLACK_BOT_TOKEN,
      // Unknown here; "" never equals an event's bot_id, so the self-event filter relies on the user id.
      botId: "",
      botUserId: botUserIdOf(req.body, config) ?? "",
      botScopes: [],
      teamId: req.context.teamId,
    };
  };
  const app = new SlackApp<SlackEdgeAppEnv>({
    // No secret here: the signature was checked before the app runs (socketMode skips slack-edge's check).
    env: { SLACK_SIGNING_SECRET: "", SLACK_LOGGING_LEVEL: SLACK_LIBRARY_LOG_LEVEL },
    socketMode: true,
    authorize,
  });

  app.event("app_mention", async (req) => startFromEvent(currentTurn(), req.payload, req.body));
  app.event("message", async (req) => startFromEvent(currentTurn(), req.payload, req.body));
  const stop = (reason: "app_uninstalled" | "tokens_revoked") => async (req: { body: { team_id?: string } }) => {
    const { env, config, starts, installation_id } = currentTurn();
    // Contract section 26: with installations, that installation's tokens are deleted, and only its.
    const install = installSettingsOf(config);
    const recorded =
      installation_id !== undefined && install !== null
        ? new InstallationStore(env.DB, install.keys).uninstall(installation_id, Date.now()).then(() => {
            logger.info("slack: an installation was uninstalled or its tokens revoked", { installation: installation_id, reason });
          })
        : recordStop(env.DB, config.SLACK_BOT_TOKEN, reason, req.body.team_id, new Date());
    starts.push(recorded);
    await recorded;
  };
  // The Home tab (contract section 19): the opener is recorded (republished on changes for 7 days) and published to at once.
  app.event("app_home_opened", async (req) => {
    const { env, config, ctx, client, scope, origin, trusted } = currentTurn();
    const { user, tab } = req.payload as { user?: unknown; tab?: unknown };
    if (typeof user !== "string" || !/^[UW][A-Z0-9]{1,30}$/.test(user) || tab !== "home" || scope.principal === undefined) return;
    const principal = scope.principal;
    const now = Date.now();
    const published = (async () => {
      // Judged as their click would be (contract section 19): their person from users.info.
      const viewer = { user, principal, team: scope.team, person: await slackPersonOf(client, principal, user, trusted) };
      await recordHomeOpened(env.DB, viewer, now);
      const installationTeam = currentTurn().installation_id === undefined ? {} : { installation_team: scope.team };
      await publishHomeNow(env.DB, client, viewer, { ...config, console_origin: config.PUBLIC_URL ?? origin, ...installationTeam }, now);
    })().catch((err: unknown) => logger.warn("slack: the Home tab was not published", { error: failureText(err) }));
    ctx.waitUntil(published);
  });
  app.event("app_uninstalled", stop("app_uninstalled"));
  app.event("tokens_revoked", stop("tokens_revoked"));

  // ---- interactivity ------------------------------------------------------
  const clickAck = async () => "";
  for (const decision of ["approve", "deny"] as const) {
    app.action(decision === "approve" ? ACTION_APPROVE : ACTION_DENY, clickAck, async (req) => {
      const turn = currentTurn();
      const { client } = turn;
      const payload = req.payload;
      const action = payload.actions[0];
      const value = parseApprovalValue(action && "value" in action ? action.value : undefined);
      const where = clickPlace(payload, value?.channel_id);
      if (!value || !where) return;
      const reply = (text: SlackText) => ephemeral(client, where, payload.user.id, text);
      // One action, one verdict: a confirm tool's approve comes back needs_confirmation and the modal opens.
      const answer = await decideAsSlackUser(
        turn,
        { kind: decision, approval_id: value.approval_id, prompt: true },
        value.run_id,
        payload.user.id,
        reply,
      );
      if (answer === null) return;
      if (answer.kind === "needs_confirmation") {
        const metadata = encodeModalMetadata({ kind: "approval", run_id: value.run_id, approval_id: value.approval_id, ...where });
        await client.views.open({ trigger_id: payload.trigger_id, view: confirmApprovalModal(answer.tool_name, metadata) });
        return;
      }
      const text = decisionReplyText(answer);
      if (text) await reply(text);
    });
  }

  app.action(ACTION_INPUT_ANSWER, clickAck, async (req) => {
    const turn = currentTurn();
    const { env, client } = turn;
    const payload = req.payload;
    const action = payload.actions[0];
    const value = parseInputValue(action && "value" in action ? action.value : undefined);
    const where = clickPlace(payload, value?.channel_id);
    if (!value || !where) return;
    const reply = (text: SlackText) => ephemeral(client, where, payload.user.id, text);
    if (value.input_id !== undefined) {
      // An MCP server's question (contract section 21): the engine decides who may answer, on submission.
      if (await isForeignRun(turn, value.run_id)) return reply(GONE_TEXT);
      const pending = pendingFormQuestion(await summaryOf(env, value.run_id), value.input_id);
      if (pending.kind !== "pending") return reply(pending.kind === "gone" ? GONE_TEXT : STALE_TEXT);
      const fields = formFields(pending.requested_schema);
      if (fields === null) return reply(FORM_NOT_SHOWN_TEXT);
      const metadata = encodeModalMetadata({ kind: "form", run_id: value.run_id, input_id: value.input_id, ...where });
      await client.views.open({ trigger_id: payload.trigger_id, view: questionFormModal(pending.question, fields, metadata) });
      return;
    }
    const summary = await deciderSummary(turn, value.run_id, reply);
    if (!summary) return;
    const pending = summary.pending_inputs.find((q) => q.tool_call_id === value.tool_call_id);
    if (!pending) return reply(STALE_TEXT);
    const metadata = encodeModalMetadata({ kind: "input", run_id: value.run_id, tool_call_id: value.tool_call_id, ...where });
    await client.views.open({ trigger_id: payload.trigger_id, view: answerInputModal(pending.question, metadata) });
  });

  app.action(ACTION_INPUT_DECLINE, clickAck, async (req) => {
    const turn = currentTurn();
    const payload = req.payload;
    const action = payload.actions[0];
    const value = parseInputValue(action && "value" in action ? action.value : undefined);
    const where = clickPlace(payload, value?.channel_id);
    if (!value?.input_id || !where) return;
    const reply = (text: SlackText) => ephemeral(turn.client, where, payload.user.id, text);
    const text = formReplyText(await answerForm(turn, value.run_id, value.input_id, { action: "decline" }, payload.user.id));
    if (text) await reply(text);
  });

  // Submissions are decided inside the acknowledgement: a wrong confirmation must answer `errors` in it.
  app.viewSubmission(VIEW_CONFIRM_APPROVAL, async (req) => {
    const turn = currentTurn();
    const payload = req.payload;
    const metadata = parseModalMetadata(payload.view.private_metadata);
    if (metadata?.kind !== "approval") return "";
    const user = payload.user.id;
    const later = (text: SlackText): "" => {
      turn.ctx.waitUntil(ephemeral(turn.client, metadata, user, text));
      return "";
    };
    const typed = modalText(payload.view.state.values);
    const answer = await decideAsSlackUser(
      turn,
      { kind: "approve", approval_id: metadata.approval_id, confirmation: typed },
      metadata.run_id,
      user,
      later,
    );
    if (answer === null) return "";
    if (isConfirmationMismatch(answer))
      return { response_action: "errors", errors: { [MODAL_INPUT_BLOCK_ID]: CONFIRMATION_MISMATCH_TEXT } };
    const text = decisionReplyText(answer);
    if (text) later(text);
    return "";
  });

  // A form question's submission: checked against its schema here (errors in the acknowledgement), then by the engine.
  app.viewSubmission(VIEW_INPUT_FORM, async (req) => {
    const turn = currentTurn();
    const payload = req.payload;
    const metadata = parseModalMetadata(payload.view.private_metadata);
    if (metadata?.kind !== "form") return "";
    const user = payload.user.id;
    const later = (text: SlackText): "" => {
      turn.ctx.waitUntil(ephemeral(turn.client, metadata, user, text));
      return "";
    };
    const pending = pendingFormQuestion(await summaryOf(turn.env, metadata.run_id), metadata.input_id);
    if (pending.kind !== "pending") return later(pending.kind === "gone" ? GONE_TEXT : STALE_TEXT);
    const fields = formFields(pending.requested_schema);
    if (fields === null) return later(FORM_NOT_SHOWN_TEXT);
    const reading = readForm(fields, enteredValues(fields, payload.view.state.values));
    if (reading.kind === "invalid") return { response_action: "errors", errors: modalErrors(fields, reading.errors) };
    const verdict = await answerForm(turn, metadata.run_id, metadata.input_id, { action: "accept", content: reading.content }, user);
    const errors = formVerdictErrors(verdict, fields);
    if (errors) return { response_action: "errors", errors: modalErrors(fields, errors) };
    const text = formReplyText(verdict);
    if (text) later(text);
    return "";
  });

  app.viewSubmission(VIEW_INPUT_ANSWER, async (req) => {
    const turn = currentTurn();
    const payload = req.payload;
    const metadata = parseModalMetadata(payload.view.private_metadata);
    if (metadata?.kind !== "input") return "";
    const user = payload.user.id;
    const later = (text: SlackText): "" => {
      turn.ctx.waitUntil(ephemeral(turn.client, metadata, user, text));
      return "";
    };
    // The run judges who may answer (contract section 19: its requester or SLACK_APPROVERS); one act, its verdict told.
    if (await isForeignRun(turn, metadata.run_id)) return later(GONE_TEXT);
    const answer = await runStubFor(turn.env, metadata.run_id).act({
      kind: "answer",
      tool_call_id: metadata.tool_call_id,
      answer: modalText(payload.view.state.values),
      actor: await slackDecider(turn, user),
    });
    const text =
      answer.kind === "refused"
        ? refusalText(
            answerDeciders(slackUserOrId(slackRequester(answer.requester ?? {}, turn.scope.team)), turn.approvers.map(slackUserOrId)),
          )
        : decisionReplyText(answer);
    if (text) later(text);
    return "";
  });

  return app;
}

/** A verified app_mention or message: a run starts for it (contract section 14), at most once per event_id. */
async function startFromEvent(
  turn: SlackTurn,
  event: unknown,
  body: { event_id?: string; authorizations?: { user_id?: string }[] },
): Promise<void> {
  const { env, config, starts, client, scope, origin, trusted } = turn;
  if (body.event_id === undefined) return;
  const intake = intakeEvent(event, {
    event_id: body.event_id,
    bot_user_id: botUserIdOf(body, config),
    scripted: config.MODEL_PROVIDER === "scripted",
  });
  if (intake.kind === "ignore" || scope.principal === undefined) return;
  const principal = scope.principal;
  // The console link in Slack's messages falls back to the origin Slack's request came to (PUBLIC_URL unset).
  const installation = turn.installation_id === undefined ? {} : { installation_id: turn.installation_id };
  const slackPlace = intake.input.slack ? { slack: { ...intake.input.slack, request_origin: origin, ...installation } } : {};
  const requested = { ...intake.input, ...slackPlace, requested_by: principal };
  const eventId = body.event_id;
  // Pushed before the first await: the acknowledgement waits for it (bounded), and a failure is answered so Slack retries.
  const started = (async () => {
    // Contract section 18: a Slack trigger over TRIGGER_RATE_PER_MINUTE is acknowledged and answered ephemerally;
    // a delivery already known (Slack's retry) is never counted.
    const known = (await getDelivery(env.DB, slackNamespace(), eventId)) !== null;
    const where = { channel_id: requested.channel_id, ...(requested.slack ? { thread_ts: requested.slack.thread_ts } : {}) };
    if (!known) {
      const retryAfter = await countTriggerRetryAfter(env, principal, config.TRIGGER_RATE_PER_MINUTE);
      if (retryAfter !== null) {
        await ephemeral(client, where, requested.user_id, rateLimitedText(config.TRIGGER_RATE_PER_MINUTE, retryAfter));
        return;
      }
    }
    // The requester's person (contract section 19) matters only where a tool forbids self-approval: asked only then.
    const input = needsRequesterPerson(config)
      ? { ...requested, requester_person: await slackPersonOf(client, principal, requested.user_id, trusted) }
      : requested;
    // Contract section 23: a halt of `all` or of this principal (or its person) starts nothing; Slack's retry of a known delivery is not refused.
    if (!known) {
      const halts = await readActiveHalts(env.DB, config.STORAGE_WAIT_MS);
      const persons = "requester_person" in input ? [input.requester_person] : [];
      const halt = halts === "unavailable" ? null : coveringHalt(halts, { requested_by: principal, persons });
      if (halt !== null) {
        await ephemeral(client, where, requested.user_id, haltedTriggerText(halt.halt_id));
        return;
      }
    }
    await startThreadRun(env, input, turn.installation_id);
  })();
  starts.push(started);
  await started;
}

/**
 * Contract section 26: with installations, nothing from one installation decides or answers anything of
 * another's runs. A run belongs to the installation whose team its Slack requester is of; any other run
 * (another installation's, or one not started in Slack) is treated as gone.
 */
async function isForeignRun(turn: SlackTurn, runId: string): Promise<boolean> {
  if (turn.installation_id === undefined) return false;
  const summary = await summaryOf(turn.env, runId);
  return summary !== null && !isOwnRun(summary, turn.scope.team);
}

function isOwnRun(summary: RunSummary, team: string): boolean {
  return SLACK_TEAM_OF.exec(summary.requested_by ?? "")?.[1] === team;
}
const SLACK_TEAM_OF = /^slack:([TE][A-Z0-9]{1,30}):/;

/** The run's summary when the acting user may answer in it; otherwise the refusal is sent and null returned. */
async function deciderSummary(turn: SlackTurn, runId: string, reply: (text: SlackText) => unknown): Promise<RunSummary | null> {
  const summary = await summaryOf(turn.env, runId);
  if (!summary || (turn.installation_id !== undefined && !isOwnRun(summary, turn.scope.team))) {
    await reply(GONE_TEXT);
    return null;
  }
  const requester = slackRequester(summary, turn.scope.team);
  if (!mayAnswerAsk(turn.actor, requester, turn.approvers)) {
    await reply(refusalText(answerDeciders(slackUserOrId(requester), turn.approvers.map(slackUserOrId))));
    return null;
  }
  return summary;
}

/** A Slack user as the eligibility module sees them (contract section 19), their person from users.info. */
async function slackDecider(turn: SlackTurn, userId: string): Promise<Decider> {
  return {
    via: "slack",
    principal_id: turn.actor,
    person: await slackPersonOf(turn.client, turn.actor, userId, turn.trusted),
    listed_in_slack_approvers: turn.approvers.includes(turn.actor),
  };
}

/**
 * A Slack user's approve or deny, entered once (the run protocol): section 19 is judged by the
 * run before anything about the approval's state is told, and a refused user hears who may
 * decide (by exact Slack id), with the refusal audited. Returns the verdict still to render, or
 * null once the refusal was told.
 */
async function decideAsSlackUser(
  turn: SlackTurn,
  action: WithoutActor<Extract<PersonAction, { kind: "approve" | "deny" }>>,
  runId: string,
  userId: string,
  reply: (text: SlackText) => unknown,
): Promise<ActionVerdict | null> {
  const { env, config, scope, approvers } = turn;
  if (await isForeignRun(turn, runId)) {
    await reply(GONE_TEXT);
    return null;
  }
  // Contract sections 23, 24: the active halts and the policy pointer, read from D1 beside users.info (one trip, not two).
  const [actor, halts] = await Promise.all([slackDecider(turn, userId), readHaltsAndPolicy(env.DB, config.STORAGE_WAIT_MS)]);
  const verdict = await runStubFor(env, runId).act({ ...action, actor }, halts);
  if (verdict.kind !== "refused") return verdict;
  await auditSlackRefusal(env, actor.principal_id, `slack ${action.kind} ${runId}/approvals/${action.approval_id}`, verdict.error);
  const requester = slackUserOrId(verdict.requester && slackRequester(verdict.requester, scope.team));
  const deciders = verdict.policy
    ? approvalDeciders(verdict.policy, config.APPROVER_GROUPS, requester, approvers.map(slackUserOrId), verdict.escalated_to)
    : { users: [], elsewhere: true };
  await reply(policyRefusalText(verdict.error, deciders));
  return null;
}

/** An answer to an MCP question through the run's RPC, as the Slack user (contract section 21: the engine checks eligibility). */
async function answerForm(turn: SlackTurn, runId: string, inputId: string, answer: FormAnswer, userId: string): Promise<ActionVerdict> {
  if (await isForeignRun(turn, runId)) return { kind: "gone" } as ActionVerdict;
  return answerFormQuestion(turn.env, runId, inputId, answer, await slackDecider(turn, userId));
}

/**
 * Starts a Slack run in its thread: a thread where the app already ran hands
 * the new run its latest run (whose turns the new conversation begins with),
 * and the new run becomes the thread's latest.
 */
async function startThreadRun(env: Env, input: Omit<StartRunInput, "run_id">, installationId: string | undefined): Promise<void> {
  const slack = input.slack;
  if (!slack) {
    await startRun(env, { ...input, run_id: newRunId() });
    return;
  }
  // Contract section 26: thread records are keyed by (installation, channel, thread_ts); a channel shared by two
  // installations keeps a thread for each.
  const channelKey = installationId === undefined ? input.channel_id : `${installationId}/${input.channel_id}`;
  const thread = { channel_id: channelKey, thread_ts: slack.thread_ts };
  const previous = await latestRunInThread(env.DB, thread);
  const started = await startRun(env, {
    ...input,
    run_id: newRunId(),
    slack: previous === null ? slack : { ...slack, previous_run_id: previous },
  });
  if (!started.duplicate) await recordThreadRun(env.DB, thread, started.input.run_id, new Date());
}

/** True when some tool's policy (or the "*" defaults) forbids self-approval: only then is the requester's person looked up. */
function needsRequesterPerson(config: HostConfig): boolean {
  return Object.values(config.TOOL_POLICY).some((entry) => entry.self_approval === false);
}

/** A Slack principal's user id, for a refusal's mentions; any other id as it is. */
function slackUserOrId<T extends string | undefined>(principal: T): T {
  return (principal === undefined ? undefined : (slackUserOf(principal) ?? principal)) as T;
}

/** A refused Slack decision's access.refused entry, through the principal's durable queue (as the API's 403s are). */
async function auditSlackRefusal(env: Env, principal: string, target: string, error: string): Promise<void> {
  try {
    await env.AUDIT_QUEUE.get(env.AUDIT_QUEUE.idFromName(principal)).enqueue({
      principal,
      action: "access.refused",
      target,
      at: new Date().toISOString(),
      details: { error },
    });
  } catch (err) {
    logger.error("audit: a Slack refusal could not be queued", { principal, error: (err as Error).message });
  }
}

function botUserIdOf(body: { authorizations?: { user_id?: string }[] }, config: HostConfig): string | undefined {
  return body.authorizations?.[0]?.user_id ?? config.SLACK_BOT_USER_ID;
}

/**
 * Where a clicked message lives: its channel and thread (the ephemeral reply goes there). A
 * Home tab click has no message: its button names the run's channel.
 */
function clickPlace(payload: object, homeChannel?: string): { channel_id: string; thread_ts?: string } | null {
  const { channel, message } = payload as { channel?: { id?: string }; message?: { ts?: string; thread_ts?: string } };
  const channelId = channel?.id ?? homeChannel;
  if (!channelId) return null;
  const threadTs = message?.thread_ts ?? message?.ts;
  return threadTs ? { channel_id: channelId, thread_ts: threadTs } : { channel_id: channelId };
}

/** The modal's single plain_text_input, read from view.state.values. */
function modalText(values: Record<string, Record<string, { value?: string | null }>>): string {
  return values[MODAL_INPUT_BLOCK_ID]?.[MODAL_INPUT_ACTION_ID]?.value ?? "";
}

async function summaryOf(env: Env, runId: string): Promise<RunSummary | null> {
  if (!isRunId(runId)) return null;
  return runStubFor(env, runId).summary();
}

/** An ephemeral answer to a click, made at once (not through the outbox); a failure is logged, never retried. */
async function ephemeral(
  client: SlackAPIClient,
  where: { channel_id: string; thread_ts?: string },
  user: string,
  text: SlackText,
): Promise<void> {
  try {
    await client.chat.postEphemeral({ channel: where.channel_id, user, text, ...(where.thread_ts ? { thread_ts: where.thread_ts } : {}) });
  } catch (err) {
    logger.warn("slack: an ephemeral reply was not delivered", { error: failureText(err) });
  }
}
