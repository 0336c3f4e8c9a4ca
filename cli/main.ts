#!/usr/bin/env node
// The `approved-exec` command (the package's bin): runs one command line and
// exits with its code (0 done, 1 refused, 2 bad usage; see program.ts).
import { run } from "./program.js";

// A reader that stops early (`approved-exec watch ... | head`) is not an error of ours: end quietly.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw err;
});

process.exitCode = await run(process.argv);
