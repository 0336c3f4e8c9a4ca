// A JSON value shown as the engine sent it (already redacted), in a box that
// wraps long strings and scrolls instead of widening the page on a phone.
export function JsonView({ value, label }: { value: unknown; label: string }) {
  return (
    <figure class="json">
      <figcaption>{label}</figcaption>
      <pre>{JSON.stringify(value, null, 2)}</pre>
    </figure>
  );
}
