// The console's shared Preact hooks: a ticking clock for countdowns, a polled
// read of the engine, and the inbox items a person acted on in this view.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { errorText } from "./api";

/** Listings and the pool are polled this often (the index may lag a moment anyway). */
const POLL_INTERVAL_MS = 2_000;

/** The current time, ticking every second: countdowns. */
export function useNow(): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1_000);
    return () => clearInterval(timer);
  }, []);
  return now;
}

export interface Polled<T> {
  data?: T;
  error?: string;
  /** Fetches again at once (after an action). */
  reload: () => void;
}

/**
 * `load` called now and every POLL_INTERVAL_MS while the component is shown;
 * `key` names what is loaded (a change starts over with no data).
 */
export function usePolled<T>(key: string, load: (signal: AbortSignal) => Promise<T>): Polled<T> {
  const [state, setState] = useState<{ key: string; data?: T; error?: string }>({ key });
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    const stop = new AbortController();
    // Polls overlap when the server is slow: an answer older than one already shown is dropped,
    // so a late reply from before a change never puts an answered item back.
    let started = 0;
    let shown = 0;
    const fresh = (n: number) => {
      if (stop.signal.aborted || n < shown) return false;
      shown = n;
      return true;
    };
    const once = () => {
      const n = ++started;
      return loadRef.current(stop.signal).then(
        (data) => fresh(n) && setState({ key, data }),
        (err: unknown) => fresh(n) && setState((s) => ({ key, data: s.key === key ? s.data : undefined, error: errorText(err) })),
      );
    };
    void once();
    const timer = setInterval(once, POLL_INTERVAL_MS);
    return () => {
      stop.abort();
      clearInterval(timer);
    };
  }, [key, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return state.key === key ? { data: state.data, error: state.error, reload } : { reload };
}

/**
 * The inboxes' items a person has acted on in this view. The listing drops an
 * item once its decision reaches the index, which may be before or after the
 * person has read "Decision sent" and followed the run's link; kept here, the
 * item stays (with its own confirmation) until the page is left.
 */
export function useActedOn<T>(listed: T[], keyOf: (item: T) => string): { shown: T[]; actedOn: (item: T) => void } {
  const [kept, setKept] = useState<T[]>([]);
  const actedOn = useCallback((item: T) => setKept((k) => (k.some((i) => keyOf(i) === keyOf(item)) ? k : [...k, item])), [keyOf]);
  const listedKeys = new Set(listed.map(keyOf));
  return { shown: [...listed, ...kept.filter((i) => !listedKeys.has(keyOf(i)))], actedOn };
}
