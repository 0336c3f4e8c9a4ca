// `npm test`'s last step: the three vitest projects as two processes side by
// side, one per core. The "node" project (end to end over loopback: each file
// starts its own `wrangler dev`, one file at a time) and the "runtime" plus
// "contract" projects (unit and in-workerd tests, one file at a time: they
// share a demo MCP server and the global storage pool) never share a server,
// a port or a state folder, so running them at once is safe; in one vitest
// process they would run one file after another (vitest puts every project
// whose files may not run in parallel into one sequential group).
//
// Each process's lines are passed through as they come, prefixed with its
// name; a summary of both follows. The exit code is non-zero if either failed.
// Arguments (file filters, `-t`) go to both processes; a filter that matches
// no file of one process is not a failure of that process.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

const args = process.argv.slice(2);
// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes are what it strips
const ANSI = /\u001b\[[0-9;]*m/g;
const vitest = new URL("../node_modules/vitest/vitest.mjs", import.meta.url).pathname;
// The "node" project (end to end and browser files, each starting its Worker
// from D1 state migrated once: about 4 s a server) and the "runtime" plus
// "contract" projects take about as long as each other (11 to 14 min on two
// busy cores), so each is one process.
const groups = [
  { name: "node", projects: ["node"] },
  { name: "runtime", projects: ["runtime", "contract"] },
];

function run({ name, projects }) {
  const argv = [vitest, "run", ...projects.flatMap((p) => ["--project", p]), ...args];
  if (args.length > 0) argv.push("--passWithNoTests");
  const started = Date.now();
  const child = spawn(process.execPath, argv, {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, FORCE_COLOR: process.env.FORCE_COLOR ?? "0" },
  });
  const tail = [];
  const failures = [];
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on("line", (line) => {
      process.stdout.write(`[${name}] ${line}\n`);
      tail.push(line);
      if (tail.length > 12) tail.shift();
      // vitest's failed files and tests ("FAIL  file > test", "× test"), repeated in the summary
      // so a CI log that keeps only its end still names them.
      const plain = line.replace(ANSI, "");
      if (/^\s*(FAIL|×)\s/.test(plain) && failures.length < 40) failures.push(plain.trim());
    });
  }
  return new Promise((resolve) => {
    child.on("close", (code, signal) => resolve({ name, code: code ?? 1, signal, tail, failures, seconds: (Date.now() - started) / 1000 }));
  });
}

const results = await Promise.all(groups.map(run));
process.stdout.write("\n");
for (const r of results) {
  const verdict = r.code === 0 ? "passed" : `FAILED (exit ${r.code}${r.signal ? `, ${r.signal}` : ""})`;
  process.stdout.write(`== ${r.name}: ${verdict} in ${r.seconds.toFixed(0)} s\n`);
  for (const line of r.tail.map((l) => l.replace(ANSI, ""))) {
    if (/Test Files|Tests |Duration/.test(line)) process.stdout.write(`   ${line.trim()}\n`);
  }
  for (const line of r.failures) process.stdout.write(`   ${line}\n`);
}
process.exit(results.every((r) => r.code === 0) ? 0 : 1);
