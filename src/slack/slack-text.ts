// The one Slack text escaper (contract section 20). Every string the app
// posts, block or fallback `text`, is a SlackText, and only this module makes
// one:
//  - untrusted(text, max): text the engine did not write (model text, tool
//    names and results, arguments, questions, people's names). It is cut
//    first (so a cut never splits an escape), its code fences are broken
//    (```` ``` ```` gets zero-width spaces between the backticks, so it cannot
//    close the app's own code block), and `&`, `<`, `>` become `&amp;`,
//    `&lt;`, `&gt;`: `<!channel>`, `<@U…>` or `<https://x|label>` shows as
//    those characters and notifies nobody.
//  - untrustedCode(text, max): the same, for a value shown inside the app's
//    inline code (`` `name` ``): its backticks become `'` as well.
//  - mrkdwn`...`: the app's own wording, a template whose every
//    interpolation must already be a SlackText (the type says so), so an
//    unescaped value cannot be spliced into a message.
//  - mention(userId), channelMention(channelId), slackDate(iso): the control
//    sequences the app itself writes, from values checked here.
// Hand-written: Slack's escaping rule is three replacements, and no library
// on the registry brands the result so the compiler can tell escaped text
// from raw text.

declare const slackTextBrand: unique symbol;
/** Text that is safe to post as mrkdwn: escaped, or the app's own. */
export type SlackText = string & { readonly [slackTextBrand]: true };

const brand = (text: string) => text as SlackText;

/** What a cut text ends with. */
export const CUT_NOTE = "… (truncated)";

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;" };
const ZWSP = "\u200b";

function breakFences(text: string): string {
  return text.replace(/`{3,}/g, (run) => run.split("").join(ZWSP));
}

/** Escapes `text` whole, or cut (between characters, never inside an escape) so that the result with the note fits in `maxChars`. */
function escapeWithin(text: string, maxChars: number): string {
  const escaped = text.replace(/[&<>]/g, (ch) => ESCAPES[ch] ?? ch);
  if (escaped.length <= maxChars) return escaped;
  const budget = Math.max(0, maxChars - CUT_NOTE.length);
  let out = "";
  for (const ch of text) {
    const piece = ESCAPES[ch] ?? ch;
    if (out.length + piece.length > budget) break;
    out += piece;
  }
  return out + CUT_NOTE;
}

/** Text the engine did not write, made safe for mrkdwn and at most `maxChars` characters once escaped. */
export function untrusted(text: string, maxChars: number): SlackText {
  return brand(escapeWithin(breakFences(text), maxChars));
}

/** As untrusted, for a value shown inside the app's inline code: no backtick can end the code span. */
export function untrustedCode(text: string, maxChars: number): SlackText {
  return brand(escapeWithin(text.replace(/`/g, "'"), maxChars));
}

/** The app's own mrkdwn with escaped values spliced in. Numbers are allowed as they are. */
export function mrkdwn(parts: TemplateStringsArray, ...values: ReadonlyArray<SlackText | number>): SlackText {
  let out = parts[0] ?? "";
  values.forEach((value, i) => {
    out += String(value) + (parts[i + 1] ?? "");
  });
  return brand(out);
}

/** SlackTexts joined by the app's own separator. */
export function joined(parts: readonly SlackText[], separator: string): SlackText {
  return brand(parts.join(separator));
}

/** A mention the app itself writes: only a Slack user id (`U…`/`W…`) becomes one; anything else is escaped text. */
export function mention(userId: string): SlackText {
  return /^[UW][A-Z0-9]{1,30}$/.test(userId) ? brand(`<@${userId}>`) : untrustedCode(userId, 200);
}

/** A link to a channel the app itself writes (a reminder's direct message, contract section 24): only a channel id becomes one. */
export function channelMention(channelId: string): SlackText {
  return /^[CGD][A-Z0-9]{1,30}$/.test(channelId) ? brand(`<#${channelId}>`) : untrustedCode(channelId, 200);
}

/** `<!date^…>` shows the time in each reader's own time zone; the ISO text is the fallback. */
export function slackDate(iso: string): SlackText {
  const seconds = Math.floor(Date.parse(iso) / 1000);
  const shown = untrusted(iso, 64);
  return Number.isFinite(seconds) ? brand(`<!date^${seconds}^{date_short_pretty} {time_secs}|${shown}>`) : shown;
}
