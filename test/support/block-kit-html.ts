// How the Slack stand-in's page (`npm run slack-demo`, http://127.0.0.1:8790)
// draws what the app posted: an approximation of Slack's own rendering of
// Block Kit in plain HTML, offline. Sections (text, fields, an accessory),
// headers, dividers, context lines, images, actions (buttons with their
// primary/danger style, selects, date pickers) and input blocks (modals)
// are drawn; mrkdwn gets bold, italic, strike, code, code blocks, quotes,
// links, mentions and dates. Anything else is named, not drawn. Every text
// is escaped for HTML (a model's `<script>` shows as those characters). Pure:
// no Node APIs, so it is unit-tested in the runtime project.

/** What the page needs of one recorded Web API call. */
export interface PostedCall {
  seq: number;
  method: string;
  params: Record<string, unknown>;
  at: number;
  answered: string;
}

type Json = Record<string, unknown>;

const escapeHtml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown) => (typeof v === "string" ? v : "");

/** Slack's escapes (`&amp;` `&lt;` `&gt;`) undone, so the text can be escaped once for HTML. */
const unescapeSlack = (s: string) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");

/** One `<...>` of mrkdwn: a link, a mention, a channel, a special mention or a date (its fallback text). */
function angle(inner: string): string {
  const [target = "", label] = inner.split("|", 2);
  if (target.startsWith("@")) return `<span class="mention">@${escapeHtml(label ?? target.slice(1))}</span>`;
  if (target.startsWith("#")) return `<span class="mention">#${escapeHtml(label ?? target.slice(1))}</span>`;
  if (target.startsWith("!date^")) return escapeHtml(label ?? target);
  if (target.startsWith("!")) return `<span class="mention">@${escapeHtml(target.slice(1).split("^")[0] ?? "")}</span>`;
  return `<a href="${escapeHtml(target)}">${escapeHtml(label ?? target)}</a>`;
}

/** The emoji the app's posts use, by Slack's short name; any other `:name:` stays as typed. */
const EMOJI: Record<string, string> = {
  question: "❓",
  x: "❌",
  white_check_mark: "✅",
  warning: "⚠️",
  speech_balloon: "💬",
  scissors: "✂️",
  octagonal_sign: "🛑",
  no_entry: "⛔",
  heavy_minus_sign: "➖",
  no_entry_sign: "🚫",
  lock: "🔒",
  hourglass: "⌛",
  bell: "🔔",
  ballot_box_with_check: "☑️",
};

/**
 * Inline mrkdwn of text already free of `<...>`: code spans first (nothing
 * inside them is formatted; they stand in as private-use placeholders meanwhile, so
 * `*`code`*` is bold code), then bold, italic, strike and emoji.
 */
function inline(text: string): string {
  const codes: string[] = [];
  const held = text.replace(/`([^`\n]+)`/g, (_m, inner: string) => `\uE000${codes.push(`<code>${escapeHtml(inner)}</code>`) - 1}\uE000`);
  return escapeHtml(held)
    .replace(/(^|[\s(])\*([^*\n]+)\*(?=$|[\s).,:;!?])/g, "$1<b>$2</b>")
    .replace(/(^|[\s(])_([^_\n]+)_(?=$|[\s).,:;!?])/g, "$1<i>$2</i>")
    .replace(/(^|[\s(])~([^~\n]+)~(?=$|[\s).,:;!?])/g, "$1<s>$2</s>")
    .replace(/:([a-z0-9_+-]+):/g, (whole, name: string) => EMOJI[name] ?? whole)
    .replace(/\uE000(\d+)\uE000/g, (_m, i: string) => codes[Number(i)] ?? "");
}

/** Slack's mrkdwn as HTML: ``` blocks, > quotes, `<...>` constructs, then inline formatting, line breaks kept. */
export function mrkdwnHtml(source: string): string {
  return source
    .split(/```/)
    .map((chunk, i) => {
      if (i % 2 === 1) return `<pre>${escapeHtml(unescapeSlack(chunk.replace(/^\n|\n$/g, "")))}</pre>`;
      return chunk
        .split("\n")
        .map((line) => {
          const quoted = line.startsWith("&gt;") || line.startsWith(">");
          const body = quoted ? line.replace(/^(&gt;|>)\s?/, "") : line;
          const html = body
            .split(/(<[^<>\n]+>)/)
            .map((piece, j) => (j % 2 === 1 ? angle(piece.slice(1, -1)) : inline(unescapeSlack(piece))))
            .join("");
          return quoted ? `<span class="quote">${html}</span>` : html;
        })
        .join("<br>");
    })
    .join("");
}

/** A text object (plain_text or mrkdwn). */
function textHtml(text: unknown): string {
  if (!isObject(text)) return "";
  return text.type === "mrkdwn" ? mrkdwnHtml(str(text.text)) : escapeHtml(str(text.text));
}

/** One interactive element as it looks (not as it works: the page only shows). */
function elementHtml(element: unknown): string {
  if (!isObject(element)) return "";
  switch (element.type) {
    case "button": {
      const style = element.style === "primary" || element.style === "danger" ? ` ${element.style}` : "";
      const link = typeof element.url === "string" ? ` title="opens ${escapeHtml(element.url)}"` : "";
      return `<button class="button${style}"${link} disabled>${textHtml(element.text)}${typeof element.url === "string" ? " ↗" : ""}</button>`;
    }
    case "image":
      return `<img alt="${escapeHtml(str(element.alt_text))}" src="${escapeHtml(str(element.image_url))}" width="16" height="16">`;
    case "mrkdwn":
    case "plain_text":
      return `<span>${textHtml(element)}</span>`;
    case "datepicker":
      return `<input type="date" disabled value="${escapeHtml(str(element.initial_date))}">`;
    case "plain_text_input":
    case "number_input":
    case "email_text_input":
    case "url_text_input":
      return element.multiline === true
        ? `<textarea disabled placeholder="${escapeHtml(str(isObject(element.placeholder) ? element.placeholder.text : ""))}"></textarea>`
        : `<input disabled placeholder="${escapeHtml(str(isObject(element.placeholder) ? element.placeholder.text : ""))}">`;
    case "radio_buttons":
    case "checkboxes": {
      const kind = element.type === "radio_buttons" ? "radio" : "checkbox";
      const options = Array.isArray(element.options) ? element.options : [];
      return options
        .map((o) => `<label class="option"><input type="${kind}" disabled> ${textHtml(isObject(o) ? o.text : undefined)}</label>`)
        .join("");
    }
    default: {
      if (typeof element.type === "string" && /select$/.test(element.type)) {
        const options = Array.isArray(element.options) ? element.options : [];
        const placeholder = isObject(element.placeholder) ? escapeHtml(str(element.placeholder.text)) : "Select…";
        return `<select disabled${/^multi_/.test(element.type) ? " multiple" : ""}><option>${placeholder}</option>${options
          .map((o) => `<option>${textHtml(isObject(o) ? o.text : undefined)}</option>`)
          .join("")}</select>`;
      }
      return `<span class="unknown">(a ${escapeHtml(str(element.type))} element: not drawn here)</span>`;
    }
  }
}

/** One block. */
function blockHtml(block: unknown): string {
  if (!isObject(block)) return "";
  switch (block.type) {
    case "section": {
      const fields = Array.isArray(block.fields)
        ? `<div class="fields">${block.fields.map((f) => `<div>${textHtml(f)}</div>`).join("")}</div>`
        : "";
      const accessory = block.accessory === undefined ? "" : `<div class="accessory">${elementHtml(block.accessory)}</div>`;
      return `<div class="block section"><div class="body">${textHtml(block.text)}${fields}</div>${accessory}</div>`;
    }
    case "header":
      return `<div class="block header">${textHtml(block.text)}</div>`;
    case "divider":
      return `<hr class="block">`;
    case "context": {
      const elements = Array.isArray(block.elements) ? block.elements : [];
      return `<div class="block context">${elements.map(elementHtml).join(" ")}</div>`;
    }
    case "actions": {
      const elements = Array.isArray(block.elements) ? block.elements : [];
      return `<div class="block actions">${elements.map(elementHtml).join("")}</div>`;
    }
    case "image":
      return `<div class="block"><img alt="${escapeHtml(str(block.alt_text))}" src="${escapeHtml(str(block.image_url))}"></div>`;
    case "input": {
      const optional = block.optional === true ? ' <span class="hint">(optional)</span>' : "";
      const hint = block.hint === undefined ? "" : `<div class="hint">${textHtml(block.hint)}</div>`;
      return `<div class="block input"><label>${textHtml(block.label)}${optional}</label>${elementHtml(block.element)}${hint}</div>`;
    }
    default:
      return `<div class="block unknown">(a ${escapeHtml(str(block.type))} block: not drawn here; its JSON is below)</div>`;
  }
}

/** A list of blocks (a message's, a modal's or a Home tab's). */
function blocksHtml(blocks: unknown): string {
  return Array.isArray(blocks) ? blocks.map(blockHtml).join("") : "";
}

/** What one call posted, drawn: a message (its blocks, else its text), a modal or a Home tab (title and blocks). */
function callBody(call: PostedCall): string {
  const { params } = call;
  const view = isObject(params.view) ? params.view : undefined;
  if (view !== undefined) {
    const title = isObject(view.title) ? `<div class="view-title">${textHtml(view.title)}</div>` : "";
    const submit = isObject(view.submit)
      ? `<div class="block actions"><button class="button primary" disabled>${textHtml(view.submit)}</button></div>`
      : "";
    return `<div class="message view">${title}${blocksHtml(view.blocks)}${submit}</div>`;
  }
  const drawn = Array.isArray(params.blocks) ? blocksHtml(params.blocks) : mrkdwnHtml(str(params.text));
  return drawn === "" ? "" : `<div class="message"><div class="author">app</div>${drawn}</div>`;
}

/** Where a call went and what it did, in a line. */
function callWhere(call: PostedCall): string {
  const { params } = call;
  const parts = [
    typeof params.channel === "string" ? `in ${params.channel}` : "",
    typeof params.thread_ts === "string" ? `thread ${params.thread_ts}` : "",
    call.method === "chat.update" && typeof params.ts === "string" ? `replaces message ${params.ts}` : "",
    typeof params.user === "string" ? `to ${params.user}` : typeof params.user_id === "string" ? `to ${params.user_id}` : "",
  ].filter((p) => p !== "");
  return escapeHtml(parts.join(" · "));
}

/** The page a person looks at during the demo: every call, newest first, drawn, with its JSON folded beneath. */
export function standInPage(calls: readonly PostedCall[]): string {
  const rows = [...calls]
    .reverse()
    .map(
      (c) =>
        `<section class="call"><h3>#${c.seq} ${escapeHtml(c.method)} <small>${callWhere(c)} · answered ${escapeHtml(c.answered)} · ${new Date(c.at).toISOString()}</small></h3>` +
        callBody(c) +
        `<details><summary>the call's JSON</summary><pre>${escapeHtml(JSON.stringify(c.params, null, 2))}</pre></details></section>`,
    )
    .join("\n");
  return `<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="2"><title>Slack stand-in</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;margin:2em;max-width:48em;color:#1d1c1d}
.call{border-top:1px solid #ddd;padding:.5em 0}.call h3{font-size:13px;color:#616061;font-weight:600}
.message{border-left:4px solid #e8e8e8;padding:.25em .75em;margin:.5em 0}.author{font-weight:700}
.view{border:1px solid #ddd;border-radius:8px;padding:.75em}.view-title{font-weight:700;font-size:18px;margin-bottom:.5em}
.block{margin:.4em 0}.section{display:flex;gap:1em}.section .body{flex:1}.fields{display:grid;grid-template-columns:1fr 1fr;gap:.25em 1em}
.header{font-weight:700;font-size:18px}.context{font-size:12px;color:#616061}.actions{display:flex;gap:.5em;flex-wrap:wrap}
.button{font:inherit;font-weight:600;padding:.25em 1em;border:1px solid #bbb;border-radius:4px;background:#fff;color:#1d1c1d}
.button.primary{background:#007a5a;border-color:#007a5a;color:#fff}.button.danger{background:#fff;border-color:#e01e5a;color:#e01e5a}
.input label{display:block;font-weight:700}.hint{font-size:12px;color:#616061}.option{display:block}
code{background:#f4f4f4;border:1px solid #e8e8e8;border-radius:3px;padding:0 .2em;color:#e01e5a}pre{background:#f8f8f8;border:1px solid #e8e8e8;padding:.5em;overflow:auto;white-space:pre-wrap}
.quote{border-left:4px solid #ddd;padding-left:.5em;display:inline-block}.mention{background:#e8f5fa;color:#1264a3;border-radius:3px;padding:0 .15em}
.unknown{color:#a0a0a0;font-style:italic}
</style>
<h1>Slack stand-in: ${calls.length} Web API calls</h1>
<p>What the app posted, drawn here roughly as Slack would draw it (sections, fields, context, buttons and their colours, modals' inputs), offline: an approximation, not Slack's renderer. Buttons only show; <code>npm run slack-demo</code> clicks for you. Each call's JSON is under it; all of them at <a href="/_calls">/_calls</a>.</p>
${rows}`;
}
