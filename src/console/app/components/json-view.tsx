// A JSON value shown as the engine sent it (already redacted), whole: no
// inner scroll box, long strings wrapped so a phone never scrolls sideways.
// A string longer than FOLD_CHARS is folded explicitly: its first
// PREVIEW_CHARS characters and a visible "show all N characters" button that
// unfolds it in place; nothing is ever cut silently.
import { useState } from "preact/hooks";

/** Strings longer than this (in characters) are folded. */
const FOLD_CHARS = 300;
/** What a folded string shows of itself. */
const PREVIEW_CHARS = 120;

function Fold({ text }: { text: string }) {
  const [open, setOpen] = useState(false);
  const chars = Array.from(text);
  return (
    <span class="fold" data-fold-chars={chars.length} data-open={open ? "true" : "false"}>
      {open ? JSON.stringify(text) : `${JSON.stringify(chars.slice(0, PREVIEW_CHARS).join("")).slice(0, -1)}…"`}{" "}
      <button type="button" class="fold-toggle secondary" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open ? "show less" : `show all ${chars.length.toLocaleString("en")} characters`}
      </button>
    </span>
  );
}

/** The value's JSON text, long strings swapped for placeholders that no JSON text of the value contains. */
function withPlaceholders(value: unknown): { text: string; folded: string[]; marker: RegExp } {
  const folded: string[] = [];
  const nonce = Math.random().toString(36).slice(2);
  const text =
    JSON.stringify(
      value,
      (_key, v: unknown) => {
        if (typeof v !== "string" || Array.from(v).length <= FOLD_CHARS) return v;
        folded.push(v);
        return `\u2063fold-${nonce}-${folded.length - 1}\u2063`;
      },
      2,
    ) ?? "null";
  return { text, folded, marker: new RegExp(`"\u2063fold-${nonce}-(\\d+)\u2063"`) };
}

export function JsonView({ value, label }: { value: unknown; label: string }) {
  const { text, folded, marker } = withPlaceholders(value);
  const pieces = folded.length === 0 ? [text] : text.split(marker);
  return (
    <figure class="json">
      <figcaption>
        {label}
        {folded.length > 0
          ? ` · ${folded.length === 1 ? "one long value folded" : `${folded.length} long values folded`}: show all to read it`
          : ""}
      </figcaption>
      <pre>{pieces.map((piece, i) => (i % 2 === 0 ? piece : <Fold key={i} text={folded[Number(piece)] ?? ""} />))}</pre>
    </figure>
  );
}
