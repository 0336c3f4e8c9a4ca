// The listings across runs (contract section 15): GET /api/runs, /api/approvals,
// /api/inputs and /api/mutations, and one item of them by id (contract section
// 26: GET /api/approvals/{approval_id}, GET /api/runs/{run_id}/inputs/{id},
// what a webhook receiver reads, after the run's retention too). Each validates its query with zod, reads one
// page from D1 with no storage-pool slot, bounded by STORAGE_WAIT_MS (503
// storage_timeout with Retry-After past it, section 9), and answers the
// section's envelope. A cursor that was not made here is a 400, never a 500.
import type { z } from "zod";
import { apiError, errorJson, jsonResponse } from "../../base/api-error";
import { validate } from "../request-body";
import { type BoundedResult, boundedStorage } from "../../outcomes/storage-guard";
import { CursorError } from "../../listings/cursor";
import {
  getApproval,
  getInput,
  listApprovals,
  listInputs,
  listMutations,
  listRuns,
  type ListingDb,
  type Page,
} from "../../listings/listing-reads";
import { approvalsQuerySchema, inputsQuerySchema, mutationsQuerySchema, runsQuerySchema } from "../../wire/listing-schemas";

/** Seconds a client should wait before asking again when D1 is slow. */
const STORAGE_RETRY_AFTER_SECONDS = 1;

/**
 * The query string as an object for zod: a parameter given twice becomes an
 * array, which no listing schema accepts (so `?status=a&status=b` is a 400,
 * not a silent pick of one).
 */
function queryObject(url: URL): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [key, value] of url.searchParams) {
    const seen = out[key];
    out[key] = seen === undefined ? value : ([] as string[]).concat(seen, value);
  }
  return out;
}

export async function listing<S extends z.ZodType, T>(
  url: URL,
  db: ListingDb,
  waitMs: number,
  schema: S,
  envelopeKey: string,
  read: (db: ListingDb, query: z.output<S>) => Promise<Page<T>>,
  /** More members of the envelope, read after the page (the audit log's sealed_through_seq). */
  extra?: (db: ListingDb) => Promise<Record<string, unknown>>,
): Promise<Response> {
  const query = validate(schema, queryObject(url));
  let result: BoundedResult<Page<T>>;
  try {
    // A listing is not a storage worker of the execution path: no pool slot, only the bound (section 9).
    result = await boundedStorage(waitMs, () => read(db, query));
  } catch (err) {
    if (err instanceof CursorError) {
      throw apiError(400, {
        error: "invalid_request",
        message: `cursor: ${err.message}; pass the next_cursor of the previous page unchanged, or leave it out for the first page.`,
        details: [{ path: "cursor", message: err.message, code: "invalid_cursor" }],
      });
    }
    throw err;
  }
  if (result.status === "timeout") {
    return errorJson(
      503,
      { error: "storage_timeout", message: `Storage did not answer within ${waitMs} ms; nothing was changed. Try again shortly.` },
      { "retry-after": String(STORAGE_RETRY_AFTER_SECONDS) },
    );
  }
  return jsonResponse(200, {
    [envelopeKey]: result.value.items,
    next_cursor: result.value.next_cursor,
    ...(extra !== undefined ? await extra(db) : {}),
  });
}

/** GET /api/runs?channel_id=&status=&limit=&cursor= */
export function handleListRuns(url: URL, db: ListingDb, waitMs: number): Promise<Response> {
  return listing(url, db, waitMs, runsQuerySchema, "runs", listRuns);
}

/** GET /api/approvals?status=pending|resolved&limit=&cursor= */
export function handleListApprovals(url: URL, db: ListingDb, waitMs: number): Promise<Response> {
  return listing(url, db, waitMs, approvalsQuerySchema, "approvals", listApprovals);
}

/** GET /api/inputs?status=pending|answered&limit=&cursor= */
export function handleListInputs(url: URL, db: ListingDb, waitMs: number): Promise<Response> {
  return listing(url, db, waitMs, inputsQuerySchema, "inputs", listInputs);
}

/** GET /api/mutations?state=&channel_id=&limit=&cursor= */
export function handleListMutations(url: URL, db: ListingDb, waitMs: number): Promise<Response> {
  return listing(url, db, waitMs, mutationsQuerySchema, "mutations", listMutations);
}

/** One listing item read by id: the item, 404 not_found, or 503 storage_timeout past the bound. */
async function oneItem<T>(waitMs: number, what: string, read: () => Promise<T | null>): Promise<Response> {
  const result = await boundedStorage(waitMs, read);
  if (result.status === "timeout") {
    return errorJson(
      503,
      { error: "storage_timeout", message: `Storage did not answer within ${waitMs} ms; nothing was changed. Try again shortly.` },
      { "retry-after": String(STORAGE_RETRY_AFTER_SECONDS) },
    );
  }
  if (result.value === null) throw apiError(404, { error: "not_found", message: `No ${what} (it may not be indexed yet).` });
  return jsonResponse(200, result.value);
}

/** GET /api/approvals/{approval_id}: the approvals listing's item (contract section 26). */
export function handleGetApproval(db: ListingDb, waitMs: number, approvalId: string): Promise<Response> {
  return oneItem(waitMs, `approval ${JSON.stringify(approvalId)}`, () => getApproval(db, approvalId));
}

/** GET /api/runs/{run_id}/inputs/{input_id or a human__ask's tool_call_id}: the inputs listing's item (contract section 26). */
export function handleGetInput(db: ListingDb, waitMs: number, runId: string, id: string): Promise<Response> {
  return oneItem(waitMs, `question ${JSON.stringify(id)} of run ${JSON.stringify(runId)}`, () => getInput(db, runId, id));
}
