// The `scripted` model provider: the trigger's `script` played turn by turn,
// for tests and the offline demo. Each turn is one "model response"; its
// `delay_ms` is how long the model thinks before answering. Every turn is
// played in order (so a script can make a long run of several messages); a
// run without a script gets one turn that echoes the message.
import type { ScriptTurn } from "../wire/trigger-script";

export function defaultScript(message: string): ScriptTurn[] {
  return [{ text: `You said: ${message}` }];
}

/** The turn at `index`, or undefined once the script is played out. */
export function scriptedTurn(script: readonly ScriptTurn[], index: number): ScriptTurn | undefined {
  return script[index];
}
