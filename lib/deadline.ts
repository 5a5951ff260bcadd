/**
 * `work`, or `timedOut()` thrown once `ms` have passed without its answer. The work is not
 * cancelled; its late failure is swallowed, since the caller has moved on.
 */
export async function withDeadline<T> (work: Promise<T>, ms: number, timedOut: () => Error = () => new Error(`no answer within ${ms} ms`)): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  work.catch(() => {})
  try {
    return await Promise.race([work, new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => { reject(timedOut()) }, ms)
    })])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * How long one plugin of a starting service may take (Fastify's `pluginTimeout`, 10 s by default).
 * Start-up opens the database, creates its indexes and reaches the session core; on a busy machine
 * or a slow database that takes longer than 10 s without anything being wrong, and a start that
 * fails then only begins again from nothing. A dependency that is down fails sooner, on its own
 * deadline.
 */
export const STARTUP_PLUGIN_DEADLINE_MS = 60_000

/**
 * How long an event read or write may take before the client is told 503 with Retry-After
 * (Fastify's `handlerTimeout`). The database driver's own deadlines (server selection,
 * connection, socket silence) add up to 5-15 s when the database hangs; a person's request
 * answers within this whatever state the database is in, while the operation ends on its own
 * deadline behind it. Event reads and writes take milliseconds when all is well.
 */
export const EVENT_REQUEST_DEADLINE_MS = 3000
