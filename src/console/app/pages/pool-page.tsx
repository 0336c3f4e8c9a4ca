// The storage pool (contract section 9): slots in use, the line, counters; polled.
import { engine } from "../api";
import { headlines, parseSamples } from "../headline-metrics";
import { ErrorLine } from "../components/error-line";
import { usePolled } from "../hooks";

export function PoolPage() {
  const { data, error } = usePolled("pool", (signal) => engine.storagePool({ signal }));
  const metrics = usePolled("metrics", async (signal) => headlines(parseSamples(await engine.metrics({ signal }))));
  return (
    <section aria-labelledby="pool-title">
      <h2 id="metrics-title">Headline metrics</h2>
      <ErrorLine message={metrics.error} />
      {metrics.data ? (
        <dl class="counters headline" aria-labelledby="metrics-title">
          {metrics.data.map((h) => (
            <div key={h.label} class={h.alert ? "alert" : undefined} data-metric={h.label}>
              <dt>{h.label}</dt>
              <dd>{h.value}</dd>
            </div>
          ))}
        </dl>
      ) : null}
      <h2 id="pool-title">Storage pool</h2>
      <ErrorLine message={error} />
      {data ? (
        <>
          <p>
            <strong>{data.in_use}</strong> of {data.capacity} slots in use · <strong>{data.waiting}</strong> waiting in line
          </p>
          <ol class="slots" aria-label={`${data.in_use} of ${data.capacity} slots in use`}>
            {Array.from({ length: data.capacity }, (_, i) => (
              <li key={i} class={i < data.in_use ? "slot held" : "slot"} title={i < data.in_use ? "held" : "free"} />
            ))}
          </ol>
          <dl class="counters">
            <dt>acquired</dt>
            <dd>{data.acquired_total}</dd>
            <dt>had to wait</dt>
            <dd>{data.waited_total}</dd>
            <dt>refused</dt>
            <dd>{data.rejected_total}</dd>
            <dt>reclaimed</dt>
            <dd>{data.reclaimed_total}</dd>
          </dl>
        </>
      ) : null}
    </section>
  );
}
