// Runs the agent loop one pass at a time: a kick while a pass is running asks
// for one more pass instead of starting a second loop beside it.
export class TurnDriver {
  #state: "idle" | "driving" | "driving_again" = "idle";
  readonly #pass: () => Promise<void>;
  readonly #onError: (err: unknown) => void;

  constructor(pass: () => Promise<void>, onError: (err: unknown) => void) {
    this.#pass = pass;
    this.#onError = onError;
  }

  kick(): void {
    if (this.#state !== "idle") {
      this.#state = "driving_again";
      return;
    }
    this.#state = "driving";
    void this.#pass()
      .catch(this.#onError)
      .finally(() => {
        const again = this.#state === "driving_again";
        this.#state = "idle";
        if (again) this.kick();
      });
  }

  /** The loop starts another iteration: kicks so far are served by it. */
  iterating(): void {
    this.#state = "driving";
  }
}
