// The CLI's side of the terminal: where lines go (stdout for results, stderr
// for errors and notes), the spinner shown while a run waits (ora, only when
// stdout is a terminal and output is not --json), and the questions asked at
// an approval or a human__ask (node:readline, only when both stdin and stdout
// are terminals).
import { createInterface, type Interface } from "node:readline";
import ora, { type Ora } from "ora";

export interface Output {
  /** --json: machine-readable lines only, no spinner, no questions. */
  readonly json: boolean;
  /** A human line on stdout (skipped under --json). */
  line(text: string): void;
  /** One JSON object on its own line on stdout. */
  object(value: unknown): void;
  /** The human line, or under --json the object. */
  result(text: string, value: unknown): void;
  /** A note or an error on stderr (always, so --json's stdout stays parseable). */
  note(text: string): void;
}

export function output(json: boolean, stdout: NodeJS.WriteStream = process.stdout, stderr: NodeJS.WriteStream = process.stderr): Output {
  return {
    json,
    line: (text) => {
      if (!json) stdout.write(`${text}\n`);
    },
    object: (value) => stdout.write(`${JSON.stringify(value)}\n`),
    result(text, value) {
      if (json) this.object(value);
      else this.line(text);
    },
    note: (text) => stderr.write(`${text}\n`),
  };
}

/** True when a person can be asked: both ends are a terminal and output is for people. */
export function interactive(json: boolean): boolean {
  return !json && process.stdin.isTTY === true && process.stdout.isTTY === true;
}

// ---- spinner ------------------------------------------------------------------------

export interface Spinner {
  /** Writes a line above the spinner. */
  print(text: string): void;
  status(text: string): void;
  pause(): void;
  resume(): void;
  stop(): void;
}

/** ora on stdout when it is a terminal and output is for people; otherwise lines only. */
export function spinner(out: Output, text: string): Spinner {
  if (out.json || process.stdout.isTTY !== true) {
    return { print: (line) => out.line(line), status: () => {}, pause: () => {}, resume: () => {}, stop: () => {} };
  }
  // discardStdin: false, or ora would put stdin in raw mode and swallow the answers to our questions.
  const ora_: Ora = ora({ text, stream: process.stdout, discardStdin: false }).start();
  let paused = false;
  return {
    print(line) {
      if (paused) return out.line(line);
      ora_.clear();
      out.line(line);
      ora_.render();
    },
    status(next) {
      ora_.text = next;
    },
    pause() {
      if (!paused) ora_.stop();
      paused = true;
    },
    resume() {
      if (paused) ora_.start();
      paused = false;
    },
    stop() {
      ora_.stop();
      paused = true;
    },
  };
}

// ---- questions ----------------------------------------------------------------------

export interface Prompter {
  /** The typed line, or undefined when stdin ended. */
  ask(question: string): Promise<string | undefined>;
  close(): void;
}

/** One readline interface for the whole command, so buffered input is never lost between questions. */
export function prompter(): Prompter {
  let rl: Interface | undefined;
  let ended = false;
  const lines: string[] = [];
  let waiting: ((line: string | undefined) => void) | undefined;
  const open = () => {
    rl = createInterface({ input: process.stdin, output: process.stdout, terminal: true });
    rl.on("line", (line) => {
      if (waiting) {
        const deliver = waiting;
        waiting = undefined;
        deliver(line);
      } else lines.push(line);
    });
    rl.on("close", () => {
      ended = true;
      waiting?.(undefined);
      waiting = undefined;
    });
  };
  return {
    ask(question) {
      if (!rl) open();
      const buffered = lines.shift();
      if (buffered !== undefined) return Promise.resolve(buffered);
      if (ended) return Promise.resolve(undefined);
      return new Promise((resolve) => {
        waiting = resolve;
        rl?.setPrompt(question);
        rl?.prompt();
      });
    },
    close() {
      rl?.close();
    },
  };
}
