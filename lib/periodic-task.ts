// One mechanism for every timer loop of both services (the outbox sweep, session revocations, the
// email poller, Sync's job claims, its self-heal sweep and its watch maintenance): a run at a time,
// the next one an interval after the last ended (a slow run is never joined by a second), a failed
// run logged and followed by the next, and a stop that waits for the run under way, so nothing
// touches the database after the process closed it.

export interface PeriodicTaskOptions {
  /** Time from the end of one run to the start of the next. */
  intervalMs: number
  run: () => Promise<unknown>
  /** A run's failure; the task goes on. */
  onError: (error: unknown) => void
}

export class PeriodicTask {
  readonly #options: PeriodicTaskOptions
  #timer: NodeJS.Timeout | undefined
  #current: Promise<void> | undefined
  #stopped = true
  /** Bumped by every start, so a run from before a stop and start schedules nothing. */
  #generation = 0

  constructor (options: PeriodicTaskOptions) {
    this.#options = options
  }

  /** Starts the loop: the first run after `firstRunInMs` (an interval unless given). */
  start (firstRunInMs = this.#options.intervalMs): void {
    clearTimeout(this.#timer)
    this.#stopped = false
    this.#generation += 1
    this.#schedule(firstRunInMs, this.#generation)
  }

  /** Runs now, or, while a run is under way, waits for that one. Never rejects. */
  async runNow (): Promise<void> {
    this.#current ??= Promise.resolve()
      .then(this.#options.run)
      .then(() => {}, this.#options.onError)
      .finally(() => { this.#current = undefined })
    await this.#current
  }

  /** No run starts after this; resolves once the run under way ended. */
  async stop (): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    this.#timer = undefined
    await this.#current
  }

  #schedule (delayMs: number, generation: number): void {
    if (this.#stopped || generation !== this.#generation) return
    this.#timer = setTimeout(() => {
      // runNow never rejects.
      this.runNow().then(() => { this.#schedule(this.#options.intervalMs, generation) }, () => {})
    }, delayMs)
    // A loop never keeps a process alive that is otherwise done.
    this.#timer.unref()
  }
}
