// Held reads of the change feed: a batched read whose pages are all empty may wait for the next
// invalidation of any of its users instead of answering "nothing" and being asked again a tick
// later. An append in this process wakes its waiters at once; appends by another Sync process are
// learnt from a change stream on the feed's counters where the database offers one, and otherwise
// by reading the waiting users' counters every few milliseconds while anyone waits.
import type { FastifyBaseLogger } from 'fastify'

/** What the feed's store tells about its users' heads (the last sequence number appended). */
export interface HeadSource {
  heads: (userIds: string[]) => Promise<Map<string, number>>
  /**
   * Calls `changed` for each user whose head moves, from any process, until closed; resolves
   * null when the database offers no change stream (a standalone server).
   */
  watchHeads: (changed: (userId: string) => void, ended: (error: unknown) => void) => Promise<HeadWatch | null>
}

export interface HeadWatch {
  close: () => Promise<void>
}

export interface FeedWaitOptions {
  /** Pause between two reads of the waiting users' heads when no change stream is open. */
  headPollMs: number
  /** Pause before a change stream that ended is opened again (the head reads cover the gap). */
  rewatchMs: number
}

const defaults: FeedWaitOptions = { headPollMs: 100, rewatchMs: 30_000 }

type HeadsMode = 'opening' | 'stream' | 'poll'

/**
 * One held read. It is opened before the read of the pages, so an append that lands while the
 * pages are read still wakes it; the heads that read found are what the head reads compare with.
 */
export class FeedWaitTicket {
  readonly userIds: readonly string[]
  readonly #heads = new Map<string, number>()
  readonly #release: (ticket: FeedWaitTicket) => void
  #woken = false
  #ended = false
  #wake: (() => void) | undefined

  constructor (userIds: readonly string[], release: (ticket: FeedWaitTicket) => void) {
    this.userIds = userIds
    this.#release = release
  }

  /** The heads the last read found: a head above one of them means that user has something new. */
  readHeads (heads: Map<string, number>): void {
    for (const [userId, head] of heads) this.#heads.set(userId, head)
  }

  headMoved (userId: string, head: number): boolean {
    const known = this.#heads.get(userId)
    return known !== undefined && head > known
  }

  wake (): void {
    this.#woken = true
    this.#wake?.()
  }

  /** The service is closing: the read answers with what it has, and waits no more. */
  end (): void {
    this.#ended = true
    this.wake()
  }

  get ended (): boolean {
    return this.#ended
  }

  /** Resolves when woken (at once if woken since the last wait), after `ms`, or on abort. */
  async wait (ms: number, signal: AbortSignal): Promise<void> {
    if (this.#woken || this.#ended || signal.aborted || ms <= 0) {
      this.#woken = false
      return
    }
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        signal.removeEventListener('abort', done)
        this.#wake = undefined
        this.#woken = false
        resolve()
      }
      const timer = setTimeout(done, ms)
      signal.addEventListener('abort', done, { once: true })
      this.#wake = done
    })
  }

  release (): void {
    this.#release(this)
  }
}

export class FeedWaits {
  readonly #source: HeadSource
  readonly #log: FastifyBaseLogger
  readonly #options: FeedWaitOptions
  readonly #byUser = new Map<string, Set<FeedWaitTicket>>()
  readonly #tickets = new Set<FeedWaitTicket>()
  #mode: HeadsMode = 'poll'
  #watch: HeadWatch | null = null
  #pollTimer: NodeJS.Timeout | undefined
  #rewatchTimer: NodeJS.Timeout | undefined
  #polling: Promise<void> | undefined
  #closed = false

  constructor (source: HeadSource, log: FastifyBaseLogger, options: Partial<FeedWaitOptions> = {}) {
    this.#source = source
    this.#log = log
    this.#options = { ...defaults, ...options }
  }

  /** How other processes' appends are learnt: a change stream, or reads of the heads. */
  get mode (): HeadsMode {
    return this.#mode
  }

  /** Held reads open now. */
  get waiting (): number {
    return this.#tickets.size
  }

  /** Opens the change stream where the database offers one; head reads cover the time it takes. */
  async start (): Promise<void> {
    if (this.#closed) return
    this.#mode = 'opening'
    this.#schedulePoll()
    let watch: HeadWatch | null
    try {
      watch = await this.#source.watchHeads((userId) => { this.appended(userId) }, (error) => { this.#watchEnded(error) })
    } catch (error) {
      this.#log.warn({ err: error }, 'change feed: no change stream on its counters; held reads read the heads instead')
      watch = null
    }
    if (this.#closed) {
      await watch?.close()
      return
    }
    this.#watch = watch
    this.#mode = watch === null ? 'poll' : 'stream'
    this.#schedulePoll()
  }

  /** An append committed for the user, here or (by the change stream) in another process. */
  appended (userId: string): void {
    for (const ticket of this.#byUser.get(userId) ?? []) ticket.wake()
  }

  open (userIds: readonly string[]): FeedWaitTicket {
    const ticket = new FeedWaitTicket([...new Set(userIds)], (released) => { this.#remove(released) })
    this.#tickets.add(ticket)
    for (const userId of ticket.userIds) {
      const tickets = this.#byUser.get(userId) ?? new Set<FeedWaitTicket>()
      tickets.add(ticket)
      this.#byUser.set(userId, tickets)
    }
    // A closing service holds nothing: the read answers with what it has.
    if (this.#closed) ticket.end()
    this.#schedulePoll()
    return ticket
  }

  /** Wakes every held read (each answers with what it has) and stops watching. */
  async close (): Promise<void> {
    this.#closed = true
    clearTimeout(this.#pollTimer)
    clearTimeout(this.#rewatchTimer)
    for (const ticket of this.#tickets) ticket.end()
    const watch = this.#watch
    this.#watch = null
    await Promise.allSettled([watch?.close(), this.#polling])
  }

  #remove (ticket: FeedWaitTicket): void {
    this.#tickets.delete(ticket)
    for (const userId of ticket.userIds) {
      const tickets = this.#byUser.get(userId)
      tickets?.delete(ticket)
      if (tickets?.size === 0) this.#byUser.delete(userId)
    }
  }

  #watchEnded (error: unknown): void {
    if (this.#closed) return
    this.#log.warn({ err: error }, 'change feed: the change stream on its counters ended; reading the heads until it is open again')
    this.#watch = null
    this.#mode = 'poll'
    this.#schedulePoll()
    clearTimeout(this.#rewatchTimer)
    this.#rewatchTimer = setTimeout(() => { this.start().catch(() => {}) }, this.#options.rewatchMs)
    this.#rewatchTimer.unref()
  }

  #schedulePoll (): void {
    if (this.#closed || this.#mode === 'stream' || this.#byUser.size === 0) return
    if (this.#pollTimer !== undefined || this.#polling !== undefined) return
    this.#pollTimer = setTimeout(() => {
      this.#pollTimer = undefined
      this.#polling = this.#pollHeads().finally(() => {
        this.#polling = undefined
        this.#schedulePoll()
      })
    }, this.#options.headPollMs)
    this.#pollTimer.unref()
  }

  async #pollHeads (): Promise<void> {
    const userIds = [...this.#byUser.keys()]
    let heads: Map<string, number>
    try {
      heads = await this.#source.heads(userIds)
    } catch (error) {
      // The held reads end at their deadline all the same; the next read of the heads tries again.
      this.#log.warn({ err: error }, 'change feed: the waiting users\' heads could not be read')
      return
    }
    for (const [userId, head] of heads) {
      for (const ticket of this.#byUser.get(userId) ?? []) {
        if (ticket.headMoved(userId, head)) ticket.wake()
      }
    }
  }
}
