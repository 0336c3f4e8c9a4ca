// The layers of the house (README "Layers"), enforced in `npm test` by
// dependency-cruiser: a room imports only rooms on its own floor or below, and
// no file is part of a circle. Floors, bottom first; a folder not listed is
// refused any import from a listed one until it is placed.
//
// What the code did before the rule existed is recorded in
// .dependency-cruiser-known-violations.json (`npm run layers:baseline` writes
// it): those imports are reported, not failed, so the baseline may only
// shrink. Every new import that runs up a floor, and every new circle, fails.
const FLOORS = [
  // The ground floor: shared helpers every room may use (src/base: the API's error codes and JSON), the wire
  // vocabulary, ids, and the consumer client (its own package, on the wire only).
  ["src/base", "src/wire", "src/ids\\.ts", "src/client"],
  // What everything reads: the event log and SQL schema, the alarm schedule, the host configuration.
  ["src/stream", "src/schedule", "src/config"],
  // Who acts and who may: principals and the one person resolution and policy.
  ["src/auth", "src/policy"],
  // The run's parts: calls and transport, durable rows, OAuth for MCP, model providers, audit, listings, operating, webhooks.
  ["src/execution", "src/outcomes", "src/mcp-oauth", "src/providers", "src/audit", "src/listings", "src/operate", "src/webhooks"],
  // The agent loop and the surfaces that translate people's actions.
  ["src/agent", "src/slack", "src/console", "src/http"],
  // The Durable Objects: thin shells over the rooms above.
  ["durable-objects"],
  // The Worker entry.
  ["src/index\\.ts"],
];

const pathOf = (rooms) => `^(${rooms.join("|")})(/|$)`;

const upward = FLOORS.slice(0, -1).map((floor, i) => ({
  name: `floor-${i}-imports-up`,
  severity: "error",
  comment: `${floor.join(", ")} may import only rooms on floor ${i} or below`,
  from: { path: pathOf(floor) },
  to: { path: pathOf(FLOORS.slice(i + 1).flat()) },
}));

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "no file is part of an import circle",
      from: {},
      to: { circular: true },
    },
    ...upward,
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // Generated: the console's bundle, and wrangler's binding types (which name the Worker entry's classes).
    exclude: { path: "^(src/console/generated/|src/config/worker-env\\.d\\.ts$)" },
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { extensions: [".ts", ".tsx", ".js", ".mjs"] },
  },
};
