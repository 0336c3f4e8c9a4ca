// Runs a command attached to a pseudo-terminal, for tests of what a program
// does when a person sits at it (isatty on stdin and stdout, line editing,
// prompts). The terminal is made by Python's standard `pty` module
// (python3 is on every machine of this project's kind; no native npm addon
// such as node-pty is needed): a small relay copies the test's writes to the
// terminal and the terminal's output back, and exits with the command's code.
import { type ChildProcess, spawn } from "node:child_process";
import { stripVTControlCharacters } from "node:util";

/** The relay: a 40x160 terminal, the command as its session's only process, copied both ways until it closes. */
const RELAY = `
import fcntl, os, select, struct, subprocess, sys, termios, pty
master, slave = pty.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
proc = subprocess.Popen(sys.argv[1:], stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
os.close(slave)
reading_stdin = True
while True:
    ready, _, _ = select.select([master] + ([0] if reading_stdin else []), [], [])
    if master in ready:
        try:
            data = os.read(master, 65536)
        except OSError:
            data = b""  # EIO: the command closed its terminal
        if not data:
            break
        os.write(1, data)
    if 0 in ready:
        data = os.read(0, 65536)
        if data:
            os.write(master, data)
        else:
            reading_stdin = False
sys.exit(proc.wait())
`;

export interface PtyProcess {
  child: ChildProcess;
  /** Everything the terminal showed so far, ANSI sequences and carriage returns removed. */
  screen(): string;
  /** Types text at the terminal (include "\n" for Enter). */
  type(text: string): void;
  /** Resolves once the screen shows `pattern` (after `fromIndex`), or rejects after `timeoutMs`. */
  waitFor(pattern: RegExp | string, timeoutMs: number, fromIndex?: number): Promise<number>;
  /** The command's exit code. */
  exited: Promise<number | null>;
}

export function spawnInPty(command: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): PtyProcess {
  const child = spawn("python3", ["-c", RELAY, command, ...args], { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
  let raw = "";
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    raw += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const screen = () => stripVTControlCharacters(raw).replaceAll("\r", "");
  return {
    child,
    screen,
    type: (text) => child.stdin?.write(text),
    exited,
    waitFor(pattern, timeoutMs, fromIndex = 0) {
      const find = () => {
        const text = screen().slice(fromIndex);
        const index = typeof pattern === "string" ? text.indexOf(pattern) : text.search(pattern);
        return index < 0 ? undefined : fromIndex + index;
      };
      return new Promise((resolve, reject) => {
        const check = () => {
          const at = find();
          if (at === undefined) return;
          done();
          resolve(at);
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`the terminal did not show ${String(pattern)} within ${timeoutMs} ms; it shows:\n${screen()}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
  };
}
