#!/usr/bin/env node
// The `approved-exec` command (the package's bin): runs one command line and
// exits with its code (0 done, 1 refused, 2 bad usage; see program.ts).
import { run } from "./program.js";

process.exitCode = await run(process.argv);
