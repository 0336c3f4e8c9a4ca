// The WEBHOOKS setting (contract section 26), a secret: a JSON list of
// endpoints, each `{"url","events":[…],"secret"}` or with `"secrets"` (newest
// first, for rotation). Fails closed: a URL that is not https (plain http only
// to 127.0.0.1, localhost or [::1] with a port), a secret that is not `whsec_`
// and the base64 of 24 to 64 bytes, or an unknown type is bad_config naming the
// entry's index (WEBHOOKS.<i>.…), never a secret's value.
import { z } from "zod";
import { WEBHOOK_TYPES, type WebhookType } from "../wire/webhooks";

/** Contract section 26: a secret's HMAC key is 24 to 64 random bytes. */
const MIN_SECRET_BYTES = 24;
const MAX_SECRET_BYTES = 64;
const SECRET_HINT = `whsec_ and the base64 of ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} random bytes (e.g. whsec_$(openssl rand -base64 32))`;
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** The number of bytes `text` decodes to as standard base64, or null when it is not base64. */
function base64Bytes(text: string): number | null {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text) || text.length % 4 !== 0) return null;
  try {
    return atob(text).length;
  } catch {
    return null;
  }
}

/** Whether `secret` is a usable signing secret (never echoed in a message). */
function isWebhookSecret(secret: string): boolean {
  if (!secret.startsWith("whsec_")) return false;
  const bytes = base64Bytes(secret.slice("whsec_".length));
  return bytes !== null && bytes >= MIN_SECRET_BYTES && bytes <= MAX_SECRET_BYTES;
}

/** https anywhere, or http to a loopback host with a port (a local receiver). */
function isWebhookUrl(text: string): boolean {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return false;
  }
  if (url.username !== "" || url.password !== "" || url.hash !== "") return false;
  if (url.protocol === "https:") return true;
  return url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname) && url.port !== "";
}

const secretSchema = z.string().refine(isWebhookSecret, SECRET_HINT);

const entrySchema = z
  .object({
    url: z
      .string()
      .refine(
        isWebhookUrl,
        "an https URL (plain http only to 127.0.0.1, localhost or [::1] with a port), without credentials or #fragment",
      ),
    events: z
      .array(z.enum(WEBHOOK_TYPES, { error: `a notification type: one of ${WEBHOOK_TYPES.join(", ")}` }))
      .min(1, "at least one notification type"),
    secret: secretSchema.optional(),
    secrets: z.array(secretSchema).min(1, "at least one secret, newest first").max(10).optional(),
  })
  .strict()
  .superRefine((entry, ctx) => {
    if ((entry.secret === undefined) === (entry.secrets === undefined))
      ctx.addIssue({ code: "custom", path: ["secret"], message: 'exactly one of "secret" or "secrets" (newest first)' });
  })
  .transform(
    (entry): WebhookEndpoint => ({
      url: entry.url,
      events: [...new Set(entry.events)],
      secrets: entry.secrets ?? (entry.secret === undefined ? [] : [entry.secret]),
    }),
  );

/** One endpoint as the engine uses it: its secrets always as the list, newest first. */
export interface WebhookEndpoint {
  url: string;
  events: WebhookType[];
  secrets: string[];
}

export const webhooksSchema = z
  .array(entrySchema)
  .max(50, "at most 50 endpoints")
  .superRefine((entries, ctx) => {
    const seen = new Set<string>();
    entries.forEach((entry, i) => {
      if (seen.has(entry.url)) ctx.addIssue({ code: "custom", path: [i, "url"], message: "the same url is listed twice" });
      seen.add(entry.url);
    });
  });
