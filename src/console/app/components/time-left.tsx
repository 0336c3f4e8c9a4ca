// A decision window's countdown with its visible label, urgent in its last half minute.
import { formatTimeLeft, secondsLeft } from "../call-cards";

export function TimeLeft({ expiresAt, now }: { expiresAt: string; now: number }) {
  const left = secondsLeft(expiresAt, now);
  return (
    <span class={left <= 30 ? "time-left urgent" : "time-left"}>
      <span class="time-left-label">Time left: </span>
      {formatTimeLeft(left)}
    </span>
  );
}
