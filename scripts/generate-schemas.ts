// `npm run schemas`: writes the JSON Schemas of the contract (events,
// mutation_outcome/v1, fixture projections) into schemas/, generated from the
// zod schemas in src/. Commit the result; test/contract fails on drift.
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { contractJsonSchemas, SCHEMAS_DIR } from "../src/listings/contract-json-schemas";

const files = contractJsonSchemas();
// Start clean so a schema that was removed from the code leaves no stale file behind.
await rm(SCHEMAS_DIR, { recursive: true, force: true });
for (const [path, text] of files) {
  const target = join(SCHEMAS_DIR, path);
  await mkdir(dirname(target), { recursive: true });
  await writeFile(target, text);
}
console.log(`wrote ${files.size} JSON Schemas into ${SCHEMAS_DIR}/: ${(await readdir(SCHEMAS_DIR)).join(", ")}`);
