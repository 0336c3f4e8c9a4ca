// The command line (contract section 15), parsed by commander: trigger and
// watch a run, list what waits for a decision, approve, deny, answer, cancel,
// list outcome_unknown rows and reconcile them; named tokens and the audit
// log (section 18). Each action talks to the
// engine through the package's own client entry point. `run()` maps what a
// command ends with to the exit code: 0 done, 1 refused (the error code is
// printed), 2 bad usage.
import { readFile } from "node:fs/promises";
import {
  ApiError,
  AUDIT_ACTIONS,
  type AuditAction,
  EngineClient,
  type EngineEvent,
  type InputAnswer,
  type PolicyPutRequest,
  type PolicyStatus,
  type Role,
  type RunSummary,
  type ScriptTurn,
  type TriggerRequest,
} from "approved-execution-engine/client";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { DEFAULT_ENGINE_URL, engineSettings } from "./environment.js";
import { EXIT_OK, EXIT_REFUSED, EXIT_USAGE, type ExitCode, UsageError } from "./exit-codes.js";
import { liveView, type LiveViewOptions } from "./live-view.js";
import { auditVerify } from "./audit-verify.js";
import { policyDiff, timeArgument } from "./policy-diff.js";
import {
  approvalLine,
  auditLine,
  haltLine,
  inputLine,
  mcpServerLine,
  mutationLine,
  policyLine,
  summaryPendingLines,
  tokenLine,
} from "./render.js";
import { interactive, type Output, output, type Prompter, prompter } from "./terminal.js";

const ENVIRONMENT_HELP = `
Environment:
  ENGINE_URL    the engine's address (default ${DEFAULT_ENGINE_URL})
  ENGINE_TOKEN  the engine's API_TOKEN or a named token (API_TOKEN is read when ENGINE_TOKEN is unset);
                decisions are recorded as the token's principal

Exit codes: 0 success, 1 the service refused (its error code is printed) or
could not be reached, or a watched run failed; 2 bad usage; \`audit verify\`
also 1 for a bad entry or signature and 3 for an unsigned tail.`;

interface GlobalOptions {
  json?: boolean;
}

/** Shared by every action: the parsed global options, the client, the output. */
interface Context {
  out: Output;
  client: EngineClient;
}

function context(command: Command): Context {
  const { json } = command.optsWithGlobals<GlobalOptions>();
  const settings = engineSettings();
  return { out: output(json === true), client: new EngineClient({ baseUrl: settings.url, token: settings.token }) };
}

interface AnswerOptions {
  accept?: Record<string, unknown>;
  decline?: boolean;
  cancel?: boolean;
}

/** `--accept <json>`: the form's content, a JSON object (contract section 21). */
function jsonObject(value: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new InvalidArgumentError("expected a JSON object, such as '{\"confirm\":true}'.");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new InvalidArgumentError("expected a JSON object.");
  return parsed as Record<string, unknown>;
}

/** The body of an answer: text for human__ask, else the MCP question's action; exactly one of them. */
function answerOf(text: string | undefined, opts: AnswerOptions): InputAnswer {
  const actions = [opts.accept !== undefined, opts.decline === true, opts.cancel === true].filter(Boolean).length;
  if ((text === undefined ? 0 : 1) + actions !== 1) {
    throw new UsageError("give either the answer text (human__ask) or one of --accept <json>, --decline, --cancel (an MCP question).");
  }
  if (text !== undefined) return { answer: text };
  if (opts.accept !== undefined) return { action: "accept", content: opts.accept };
  return { action: opts.decline === true ? "decline" : "cancel" };
}

function nonNegativeInt(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError("expected a whole number >= 0.");
  return Number(value);
}

/** Wraps an action so that the exit code it resolves to is kept (commander discards action results). */
type Act = <A extends unknown[]>(action: (...args: A) => Promise<ExitCode>) => (...args: A) => Promise<void>;

function buildProgram(act: Act): Command {
  const program = new Command("approved-exec")
    .description("Trigger, watch and decide the runs of an approved-execution engine.")
    .option("--json", "machine-readable output: one JSON object per line")
    .showHelpAfterError("(run with --help for usage)")
    .addHelpText("after", ENVIRONMENT_HELP)
    .exitOverride();

  program
    .command("trigger")
    .description("start a run with a message; --watch follows it live")
    .argument("<message>", "what the person asks")
    .option("-w, --watch", "follow the run until it ends (approve? [y/N] at each approval when at a terminal)")
    .option("--channel <channel_id>", "the run's channel (default api)")
    .option("--user <user_id>", "the person an adapter token triggers for (default: the token's own principal)")
    .option("--script <file.json>", 'the scripted model\'s turns: a JSON array, or {"script": [...]}')
    .option("--delivery-id <id>", "the delivery identity (Idempotency-Key); a repeat gets the first run")
    .option("--max-tool-calls <n>", "narrow the run's call ceiling", nonNegativeInt)
    .option("--no-prompt", "never ask at the terminal, only show")
    .option("--heartbeats", "show heartbeat events too")
    .action(
      act(async (message: string, opts: TriggerOptions, command: Command) => {
        const { out, client } = context(command);
        const body: TriggerRequest = {
          message,
          ...(opts.channel === undefined ? {} : { channel_id: opts.channel }),
          ...(opts.user === undefined ? {} : { user_id: opts.user }),
          ...(opts.maxToolCalls === undefined ? {} : { max_tool_calls: opts.maxToolCalls }),
          ...(opts.script === undefined ? {} : { script: await readScript(opts.script) }),
        };
        const idempotency = opts.deliveryId === undefined ? {} : { idempotencyKey: opts.deliveryId };
        if (!opts.watch) {
          const receipt = await client.trigger(body, idempotency);
          out.result(`${receipt.status} ${receipt.run_id} channel=${receipt.channel_id}`, receipt);
          return EXIT_OK;
        }
        const stream = await client.triggerStream(body, idempotency);
        out.line(`${stream.duplicate ? "duplicate of" : "started"} ${stream.runId}`);
        return watchTo(client, out, stream.runId, stream.events, opts);
      }),
    );

  program
    .command("watch")
    .description("follow a run's events live until it ends")
    .argument("<run_id>")
    .option("--after <sequence>", "start after this sequence (default 0: from the first event)", nonNegativeInt)
    .option("--no-prompt", "never ask at the terminal, only show")
    .option("--heartbeats", "show heartbeat events too")
    .action(
      act(async (runId: string, opts: WatchOptions, command: Command) => {
        const { out, client } = context(command);
        // What already happened is replayed; what was decided by then is shown, not asked or hinted at again.
        const summary = await client.summary(runId);
        const replayed = {
          through: summary.last_sequence,
          pending: new Set([
            ...summary.pending_approvals.map((a) => a.approval_id),
            ...summary.pending_inputs.map((i) => i.input_id ?? i.tool_call_id),
          ]),
        };
        return watchTo(client, out, runId, client.events(runId, { after: opts.after ?? 0 }), opts, replayed);
      }),
    );

  program
    .command("pending")
    .description("approvals and questions waiting for a person (across runs, or of one run with --run)")
    .option("--run <run_id>", "only this run (read from its summary)")
    .action(
      act(async (opts: { run?: string }, command: Command) => {
        const { out, client } = context(command);
        if (opts.run !== undefined) {
          const summary = await client.summary(opts.run);
          const lines = summaryPendingLines(summary, await requestedApprovals(client, summary));
          if (out.json) out.object({ run_id: summary.run_id, approvals: summary.pending_approvals, inputs: summary.pending_inputs });
          else for (const line of lines.length > 0 ? lines : [`nothing in ${summary.run_id} waits for a person`]) out.line(line);
          return EXIT_OK;
        }
        const approvals = await collect(client.items("approvals", { status: "pending" }));
        const inputs = await collect(client.items("inputs", { status: "pending" }));
        if (out.json) out.object({ approvals, inputs });
        else if (approvals.length + inputs.length === 0) out.line("nothing waits for a person");
        else for (const line of [...approvals.map(approvalLine), ...inputs.map(inputLine)]) out.line(line);
        return EXIT_OK;
      }),
    );

  for (const decision of ["approve", "deny"] as const) {
    const command = program
      .command(decision)
      .description(decision === "approve" ? "approve a pending tool call" : "deny a pending tool call")
      .argument("<run_id>")
      .argument("<approval_id>")
      .option("--reason <text>", "why, recorded with the decision");
    if (decision === "approve") {
      command.option("--confirm <tool_name>", "the tool's name, typed, for tools whose level is confirm (asked for at a terminal)");
    }
    command.action(
      act(async (runId: string, approvalId: string, opts: DecideOptions, cmd: Command) => {
        const { out, client } = context(cmd);
        const send = (confirmation: string | undefined) =>
          client.decideApproval(runId, approvalId, {
            decision,
            ...(opts.reason === undefined ? {} : { reason: opts.reason }),
            ...(confirmation === undefined ? {} : { confirmation }),
          });
        let result: Awaited<ReturnType<typeof send>>;
        try {
          result = await send(opts.confirm);
        } catch (err) {
          // A confirm tool approved without its name: at a terminal, ask for it once and send again.
          if (!(err instanceof ApiError && err.code === "confirmation_mismatch" && opts.confirm === undefined && interactive(out.json)))
            throw err;
          const pending = (await client.summary(runId)).pending_approvals.find((a) => a.approval_id === approvalId);
          const ask = prompter();
          try {
            const typed = await ask.ask(`type the tool name${pending ? ` (${pending.tool_name})` : ""} to confirm: `);
            if (typed === undefined) throw err;
            result = await send(typed.trim());
          } finally {
            ask.close();
          }
        }
        // The reason as sent; the engine keeps it redacted (the event, the approvals listing and `watch` show that form).
        const why = opts.reason === undefined ? "" : ` reason=${JSON.stringify(opts.reason)}`;
        // Contract section 19: a counted vote of several required leaves the approval pending.
        const votes = result.status === "pending" ? ` votes=${result.votes}/${result.required} (pending)` : "";
        out.result(`${result.decision} ${result.approval_id}${votes}${why}`, result);
        return EXIT_OK;
      }),
    );
  }

  program
    .command("answer")
    .description("answer a human__ask question (text), or an MCP tool's question mid-call (--accept, --decline, --cancel)")
    .argument("<run_id>")
    .argument("<id>", "the human__ask's tool_call_id, or the MCP question's input_id")
    .argument("[text]", "the answer to a human__ask, given to the model")
    .addOption(new Option("--accept <json>", "accept an MCP question with this form content (a JSON object)").argParser(jsonObject))
    .addOption(new Option("--decline", "decline an MCP question").conflicts(["accept", "cancel"]))
    .addOption(new Option("--cancel", "cancel an MCP question").conflicts(["accept", "decline"]))
    .action(
      act(async (runId: string, id: string, text: string | undefined, opts: AnswerOptions, command: Command) => {
        const { out, client } = context(command);
        const answer = answerOf(text, opts);
        const result = await client.answerInput(runId, id, answer);
        out.result("action" in result ? `${result.action} ${result.input_id}` : `answered ${id}`, result);
        return EXIT_OK;
      }),
    );

  program
    .command("cancel")
    .description("cancel a run")
    .argument("<run_id>")
    .action(
      act(async (runId: string, _opts: unknown, command: Command) => {
        const { out, client } = context(command);
        const result = await client.cancel(runId);
        out.result(result.status === "cancelling" ? `cancelling ${runId}` : `${runId} had already ended: ${result.status}`, result);
        return EXIT_OK;
      }),
    );

  program
    .command("unknown")
    .description("mutation rows whose outcome is unknown, waiting for reconciliation")
    .option("--channel <channel_id>", "only this channel")
    .action(
      act(async (opts: { channel?: string }, command: Command) => {
        const { out, client } = context(command);
        const mutations = await collect(
          client.items("mutations", { state: "outcome_unknown", ...(opts.channel === undefined ? {} : { channel_id: opts.channel }) }),
        );
        if (out.json) out.object({ mutations });
        else if (mutations.length === 0) out.line("no outcome_unknown rows");
        else for (const m of mutations) out.line(mutationLine(m));
        return EXIT_OK;
      }),
    );

  program
    .command("reconcile")
    .description("settle an outcome_unknown row after checking the tool's side")
    .argument("<mutation_id>")
    .addOption(new Option("--outcome <outcome>", "what really happened").choices(["completed", "not_executed"]).makeOptionMandatory())
    .requiredOption("--evidence <text>", "how you know (a ticket, a log line, the dashboard's id)")
    .action(
      act(async (mutationId: string, opts: ReconcileOptions, command: Command) => {
        const { out, client } = context(command);
        const row = await client.reconcile(mutationId, { outcome: opts.outcome, evidence: opts.evidence });
        out.result(mutationLine(row), row);
        return EXIT_OK;
      }),
    );

  // Halts (contract section 23): engage, release, list.
  program
    .command("halt")
    .description("stop mutations in a scope at once: all, server:<server>, tool:<tool_name> or principal:<id> (approver or admin)")
    .argument("<scope>", "all | server:<server> | tool:<tool_name> | principal:<principal id>")
    .requiredOption("--reason <text>", "why (1..500 characters)")
    .option("--cancel-runs", "also cancel the running runs in scope (all and principal: only)")
    .action(
      act(async (scope: string, opts: { reason: string; cancelRuns?: boolean }, command: Command) => {
        const { out, client } = context(command);
        const halt = await client.engageHalt({ scope, reason: opts.reason, ...(opts.cancelRuns === true ? { cancel_runs: true } : {}) });
        out.result(haltLine(halt), halt);
        return EXIT_OK;
      }),
    );
  program
    .command("release")
    .description("vote to release a halt; HALT_RELEASE_APPROVALS distinct persons release it (admin)")
    .argument("<halt_id>")
    .action(
      act(async (haltId: string, _opts: unknown, command: Command) => {
        const { out, client } = context(command);
        const answer = await client.releaseHalt(haltId);
        const line =
          answer.status === "released"
            ? `${answer.halt_id} released by=${answer.released_by} at=${answer.released_at}`
            : `${answer.halt_id} still active: ${answer.releases} of ${answer.required} release votes`;
        out.result(line, answer);
        return EXIT_OK;
      }),
    );
  program
    .command("halts")
    .description("halts, newest first (viewer)")
    .addOption(new Option("--status <status>", "only these").choices(["active", "released"]))
    .action(
      act(async (opts: { status?: "active" | "released" }, command: Command) => {
        const { out, client } = context(command);
        const page = await client.listHalts(opts.status === undefined ? {} : { status: opts.status });
        if (out.json) out.object(page);
        else if (page.halts.length === 0) out.line(opts.status === "active" ? "no active halts" : "no halts");
        else for (const h of page.halts) out.line(haltLine(h));
        return EXIT_OK;
      }),
    );

  // Policy as versioned data (contract section 24): read, change, list, approve.
  const policy = program
    .command("policy")
    .description("the approval policy as versioned data (TOOL_POLICY, APPROVER_GROUPS, MUTATION_BUDGET)");
  policy
    .command("get")
    .description("the active policy version, its document whole (viewer)")
    .argument("[version]", "a version number instead of the active one", versionArgument)
    .action(
      act(async (version: number | undefined, _opts: unknown, command: Command) => {
        const { out, client } = context(command);
        const found = version === undefined ? await client.getPolicy() : await client.getPolicyVersion(version);
        if (out.json) out.object(found);
        else {
          out.line(policyLine(found));
          for (const l of found.loosens) out.line(`  loosens ${l.path}: ${JSON.stringify(l.from)} -> ${JSON.stringify(l.to)}`);
          out.line(JSON.stringify(found.policy, null, 2));
        }
        return EXIT_OK;
      }),
    );
  policy
    .command("put")
    .description(
      "store a new version from a JSON file {tools, groups, budget}: active at once when it only tightens, else proposed (admin)",
    )
    .argument("<file>", "the policy document (JSON)")
    .option("--base <version>", "the active version it changes (default: the active one now)", versionArgument)
    .option("--comment <text>", "why (0..1,000 characters)")
    .option("--shadow", "store it as the shadow version (decides nothing)")
    .action(
      act(async (file: string, opts: { base?: number; comment?: string; shadow?: boolean }, command: Command) => {
        const { out, client } = context(command);
        const document = await readJsonFile(file);
        const base = opts.base ?? (await client.getPolicy()).version;
        const stored = await client.putPolicy({
          policy: document as PolicyPutRequest["policy"],
          base_version: base,
          ...(opts.comment !== undefined ? { comment: opts.comment } : {}),
          ...(opts.shadow === true ? { mode: "shadow" as const } : {}),
        });
        if (out.json) out.object(stored);
        else {
          out.line(policyLine(stored));
          for (const l of stored.loosens) out.line(`  loosens ${l.path}: ${JSON.stringify(l.from)} -> ${JSON.stringify(l.to)}`);
          if (stored.status === "proposed") out.line(`  another admin approves it: policy approve ${stored.version}`);
        }
        return EXIT_OK;
      }),
    );
  policy
    .command("versions")
    .description("policy versions, newest first; version 0 (the settings) last (viewer)")
    .addOption(new Option("--status <status>", "only these").choices(["active", "proposed", "shadow", "superseded", "withdrawn", "stale"]))
    .action(
      act(async (opts: { status?: PolicyStatus }, command: Command) => {
        const { out, client } = context(command);
        const page = await client.listPolicyVersions(opts.status === undefined ? { limit: 200 } : { status: opts.status, limit: 200 });
        if (out.json) out.object(page);
        else if (page.versions.length === 0) out.line("no versions");
        else for (const v of page.versions) out.line(policyLine(v));
        return EXIT_OK;
      }),
    );
  policy
    .command("shadow")
    .description("where the shadow version's verdict at a check differed from the active one's, newest first (viewer)")
    .option("--version <version>", "only this version's differences", versionArgument)
    .option("--limit <n>", "at most this many", (v: string) => Number.parseInt(v, 10), 50)
    .action(
      act(async (opts: { version?: number; limit: number }, command: Command) => {
        const { out, client } = context(command);
        const page = await client.listPolicyShadowDifferences(
          opts.version === undefined ? { limit: opts.limit } : { version: opts.version, limit: opts.limit },
        );
        if (out.json) out.object(page);
        else if (page.differences.length === 0) out.line("no differences");
        else
          for (const d of page.differences)
            out.line(`${d.at}  ${d.run_id}  ${d.tool_call_id}  ${d.tool_name}  ${d.check}: active ${d.active}, shadow ${d.shadow}`);
        return EXIT_OK;
      }),
    );
  policy
    .command("approve")
    .description("activate a proposed or shadow version; one that loosens needs an admin who is another person (admin)")
    .argument("<version>", "the version number", versionArgument)
    .action(
      act(async (version: number, _opts: unknown, command: Command) => {
        const { out, client } = context(command);
        const active = await client.approvePolicyVersion(version);
        out.result(policyLine(active), active);
        return EXIT_OK;
      }),
    );
  policy
    .command("diff")
    .description("replay recorded calls against a candidate policy and print each check it decides otherwise (admin)")
    .argument("<candidate>", 'the candidate policy, a JSON file {"tools","groups","budget"}')
    .requiredOption("--since <when>", "from: a duration back from now (7d, 12h) or an ISO 8601 UTC time", timeArgument(Date.now()))
    .option("--until <when>", "to (default now): a duration back from now or an ISO 8601 UTC time", timeArgument(Date.now()))
    .action(
      act(async (file: string, opts: { since: string; until?: string }, command: Command) => {
        const { out, client } = context(command);
        return policyDiff(out, client, file, opts);
      }),
    );

  const mcp = program.command("mcp").description("the configured MCP servers");
  mcp
    .command("list")
    .description("each configured MCP server as last seen: protocol version, tools, last contact (viewer)")
    .action(
      act(async (_opts: unknown, command: Command) => {
        const { out, client } = context(command);
        const list = await client.listMcpServers();
        if (out.json) out.object({ servers: list });
        else if (list.length === 0) out.line("no MCP servers configured");
        else for (const s of list) out.line(mcpServerLine(s));
        return EXIT_OK;
      }),
    );
  mcp
    .command("connect")
    .argument("<server>", "a server of MCP_SERVERS with oauth")
    .description("print the URL to open (signed in as this token's principal) to connect an OAuth MCP server (admin)")
    .action(
      act(async (server: string, _opts: unknown, command: Command) => {
        const { out, client } = context(command);
        const url = await client.connectMcpServer(server);
        if (out.json) out.object({ authorization_url: url });
        else out.line(url);
        return EXIT_OK;
      }),
    );

  const tokens = program.command("tokens").description("named API tokens (admin): create, list, revoke");
  tokens
    .command("create")
    .description("make a named token; its value is printed once")
    .argument("<name>", "lower-case letters, digits and -, never used before")
    .addOption(new Option("--role <role...>", "its roles").choices(ROLE_CHOICES).makeOptionMandatory())
    .option("--owner <principal>", "the person it acts for (access:<email> or slack:<team>:<user>)")
    .option("--ttl-days <days>", "days until it expires (default 90)", nonNegativeInt)
    .action(
      act(async (name: string, opts: { role: Role[]; owner?: string; ttlDays?: number }, command: Command) => {
        const { out, client } = context(command);
        const made = await client.createToken({
          name,
          roles: opts.role,
          ...(opts.owner === undefined ? {} : { owner: opts.owner }),
          ...(opts.ttlDays === undefined ? {} : { ttl_days: opts.ttlDays }),
        });
        if (out.json) out.object(made);
        else {
          out.line(`created token:${made.name} roles=${made.roles.join(",")} expires=${made.expires_at}`);
          out.line(made.token);
          out.note("the value above is shown only once: keep it now");
        }
        return EXIT_OK;
      }),
    );
  tokens
    .command("list")
    .description("every named token, never a value")
    .action(
      act(async (_opts: unknown, command: Command) => {
        const { out, client } = context(command);
        const list = await client.listTokens();
        if (out.json) out.object({ tokens: list });
        else if (list.length === 0) out.line("no named tokens");
        else for (const t of list) out.line(tokenLine(t));
        return EXIT_OK;
      }),
    );
  tokens
    .command("revoke")
    .description("revoke a named token and end its console sessions")
    .argument("<name>")
    .action(
      act(async (name: string, _opts: unknown, command: Command) => {
        const { out, client } = context(command);
        const revoked = await client.revokeToken(name);
        out.result(`revoked token:${revoked.name} at ${revoked.revoked_at}`, revoked);
        return EXIT_OK;
      }),
    );

  const audit = program
    .command("audit")
    .description("the audit log, newest first (admin); `audit verify <file>` checks an export offline")
    .option("--principal <id>", "only this principal (e.g. token:ci)")
    .addOption(new Option("--action <action>", "only this action").choices(AUDIT_ACTIONS))
    .option("--limit <n>", "entries (1..200, default 50)", nonNegativeInt)
    .option("--cursor <cursor>", "the next page: the cursor a previous page named")
    .action(
      act(async (opts: { principal?: string; action?: AuditAction; limit?: number; cursor?: string }, command: Command) => {
        const { out, client } = context(command);
        const page = await client.audit({
          ...(opts.principal === undefined ? {} : { principal: opts.principal }),
          ...(opts.action === undefined ? {} : { action: opts.action }),
          ...(opts.limit === undefined ? {} : { limit: opts.limit }),
          ...(opts.cursor === undefined ? {} : { cursor: opts.cursor }),
        });
        if (out.json) out.object(page);
        else if (page.entries.length === 0) out.line("no audit entries");
        else for (const e of page.entries) out.line(auditLine(e));
        // On stderr, so stdout stays one entry per line.
        if (!out.json && page.next_cursor !== null) out.note(`older entries: audit --cursor ${page.next_cursor} (same filters)`);
        return EXIT_OK;
      }),
    );
  audit
    .command("verify")
    .description("check an audit export (GET /api/audit/export) offline: hashes, links, seq steps, signatures (exit 0, 1 or 3)")
    .argument("<file>", "the export, JSON Lines")
    .option("--public-key <file>", "a JWK, or GET /api/audit/public-key's answer: checks the checkpoints' signatures")
    .action(
      act(async (file: string, opts: { publicKey?: string }, command: Command) => {
        const { json } = command.optsWithGlobals<GlobalOptions>();
        return auditVerify(output(json === true), file, opts.publicKey);
      }),
    );

  return program;
}

const ROLE_CHOICES: Role[] = ["viewer", "requester", "approver", "reconciler", "admin", "adapter"];

interface WatchOptions {
  after?: number;
  prompt: boolean;
  heartbeats?: boolean;
}

interface TriggerOptions extends WatchOptions {
  watch?: boolean;
  channel?: string;
  user?: string;
  script?: string;
  deliveryId?: string;
  maxToolCalls?: number;
}

interface DecideOptions {
  reason?: string;
  confirm?: string;
}

interface ReconcileOptions {
  outcome: "completed" | "not_executed";
  evidence: string;
}

async function watchTo(
  client: EngineClient,
  out: Output,
  runId: string,
  events: AsyncIterable<EngineEvent>,
  opts: WatchOptions,
  replayed?: LiveViewOptions["replayed"],
): Promise<ExitCode> {
  const ask: Prompter | undefined = opts.prompt && interactive(out.json) ? prompter() : undefined;
  try {
    const terminal = await liveView(client, runId, events, {
      out,
      prompter: ask,
      // Asked for prompts (no --no-prompt), but nobody can be asked: say so at each wait instead of waiting silently.
      hintWhenUnasked: opts.prompt && !out.json && ask === undefined,
      showHeartbeats: opts.heartbeats === true,
      ...(replayed === undefined ? {} : { replayed }),
    });
    if (terminal === undefined) {
      // 204: the run had ended before `after`; its status says how.
      const summary = await client.summary(runId);
      return summary.status === "failed" ? EXIT_REFUSED : EXIT_OK;
    }
    if (terminal.type === "run_failed") {
      out.note(`run failed: ${terminal.error.code}: ${terminal.error.message}`);
      return EXIT_REFUSED;
    }
    return EXIT_OK;
  } finally {
    ask?.close();
  }
}

async function readScript(path: string): Promise<ScriptTurn[]> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new UsageError(`--script ${path}: cannot read it (${(err as Error).message}).`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--script ${path}: not JSON (${(err as Error).message}).`);
  }
  const script = Array.isArray(parsed) ? parsed : (parsed as { script?: unknown } | null)?.script;
  if (!Array.isArray(script)) throw new UsageError(`--script ${path}: expected a JSON array of turns, or {"script": [...]}.`);
  return script as ScriptTurn[];
}

/** A policy version number (commander's argument parser). */
function versionArgument(value: string): number {
  if (!/^(0|[1-9][0-9]{0,8})$/.test(value)) throw new InvalidArgumentError("expected a version number (a whole number >= 0).");
  return Number(value);
}

/** A JSON file's value; an unreadable or non-JSON file is bad usage. */
async function readJsonFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new UsageError(`${path}: cannot read it (${(err as Error).message}).`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${path}: not JSON (${(err as Error).message}).`);
  }
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/** Parses and runs one command line (as process.argv has it); resolves to the exit code. */
export async function run(argv: readonly string[]): Promise<ExitCode> {
  let code: ExitCode = EXIT_OK;
  const act: Act =
    (action) =>
    async (...args) => {
      code = await action(...args);
    };
  try {
    await buildProgram(act).parseAsync([...argv]);
    return code;
  } catch (err) {
    return exitCodeFor(err, argv.includes("--json"));
  }
}

function exitCodeFor(err: unknown, json: boolean): ExitCode {
  if (err instanceof CommanderError) {
    // Help and version are successes; commander has already printed every parse error.
    return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
  }
  if (err instanceof UsageError) {
    process.stderr.write(`error: ${err.message}\n`);
    return EXIT_USAGE;
  }
  if (err instanceof ApiError) {
    if (json) process.stderr.write(`${JSON.stringify({ status: err.status, ...err.body })}\n`);
    else process.stderr.write(`error: ${err.code} (${err.status}): ${err.body.message ?? err.message}\n${detailLines(err.details)}`);
    return EXIT_REFUSED;
  }
  // fetch's network failure: a TypeError whose cause is the system's error (ECONNREFUSED, ENOTFOUND, ...).
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (err instanceof TypeError && cause !== undefined) {
    const why = typeof cause.code === "string" ? cause.code : String(cause.message ?? cause);
    // The settings were read before any request was sent, so they read the same here.
    const url = process.env.ENGINE_URL?.trim() || DEFAULT_ENGINE_URL;
    process.stderr.write(`error: cannot reach the engine at ${url} (${why}); is it running, and is ENGINE_URL right?\n`);
    return EXIT_REFUSED;
  }
  throw err;
}

/** The refusal's details (an answer that does not fit its form: which field, why), one indented line each. */
function detailLines(details: unknown): string {
  if (details === undefined || details === null) return "";
  const items = Array.isArray(details) ? details : [details];
  return items
    .map((item) => {
      if (typeof item === "string") return `  ${item}\n`;
      const { path, message } = (item ?? {}) as { path?: unknown; message?: unknown };
      if (typeof message !== "string") return `  ${JSON.stringify(item)}\n`;
      const where = Array.isArray(path) ? path.join(".") : typeof path === "string" ? path : "";
      return `  ${where === "" ? "" : `${where}: `}${message}\n`;
    })
    .join("");
}

/**
 * The approval_requested event of each approval the summary lists as pending
 * (level, arguments, hidden paths: the summary carries only ids and times),
 * read from the run's own log, which already holds them; the stream is closed
 * as soon as all are found. Not the D1 listing, which may lag.
 */
type ApprovalRequested = Extract<EngineEvent, { type: "approval_requested" }>;

async function requestedApprovals(client: EngineClient, summary: RunSummary): Promise<Map<string, ApprovalRequested>> {
  const wanted = new Set(summary.pending_approvals.map((a) => a.approval_id));
  const found = new Map<string, ApprovalRequested>();
  if (wanted.size === 0) return found;
  for await (const event of client.events(summary.run_id, { after: 0 })) {
    if (event.type === "approval_requested" && wanted.has(event.approval_id)) found.set(event.approval_id, event);
    if (found.size === wanted.size || event.sequence >= summary.last_sequence) break;
  }
  return found;
}
