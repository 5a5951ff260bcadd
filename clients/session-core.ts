import { Agent, Pool, setGlobalDispatcher, type Dispatcher } from 'undici'
import { decodeJwt } from 'jose'

/**
 * Deadlines of every call to the session core. The session library calls the core with the
 * process's global fetch, which would wait minutes for a core that accepts connections and never
 * answers (a hung process; the kernel still accepts). With these, a call to a silent core fails
 * within seconds and the request is answered 503 with Retry-After instead of hanging.
 */
const SESSION_CORE_DEADLINES = {
  /** Opening a connection. */
  connectTimeoutMs: 2000,
  /** From the request sent to the answer's headers; the core answers in milliseconds when it is well. */
  headersTimeoutMs: 3000,
  /** Silence while the answer's body arrives. */
  bodyTimeoutMs: 3000
} as const

/** A verification that has not finished by then waits on a silent core (its signing keys). */
export const SESSION_VERIFY_DEADLINE_MS = 4000
/** What a client is told to wait before retrying while the session core is unavailable. */
export const SESSION_CORE_RETRY_AFTER_SECONDS = 5

const coreOrigins = new Set<string>()
let installed = false

/**
 * Gives every fetch to the session core at `uri` the deadlines above. The library's calls go
 * through the process's global dispatcher, so the deadlines are set there, for the core's origin
 * only; every other origin keeps undici's defaults.
 */
export function installSessionCoreDeadlines (uri: string): void {
  coreOrigins.add(new URL(uri).origin)
  if (installed) return
  installed = true
  setGlobalDispatcher(new Agent({
    factory: (origin: string | URL, options: Pool.Options): Dispatcher => {
      const name = typeof origin === 'string' ? new URL(origin).origin : origin.origin
      // This Agent sets no `connections`, so undici's own choice for every other origin is a Pool.
      if (!coreOrigins.has(name)) return new Pool(origin, options)
      return new Pool(origin, {
        ...options,
        connect: { timeout: SESSION_CORE_DEADLINES.connectTimeoutMs },
        headersTimeout: SESSION_CORE_DEADLINES.headersTimeoutMs,
        bodyTimeout: SESSION_CORE_DEADLINES.bodyTimeoutMs
      })
    }
  }))
}

/**
 * The session library's errors for a core it could not reach or that failed (5xx): worth a retry
 * later, unlike a refusal. The library reports them as plain errors with these messages.
 */
export function isSessionCoreUnavailableError (error: unknown): boolean {
  if (!(error instanceof Error)) return false
  if (error.message.startsWith('No SuperTokens core available to query')) return true
  return /^SuperTokens core threw an error for a \w+ request to path: '[^']*' with status code: 5\d\d/.test(error.message)
}

/** The expiry (epoch ms) an access token claims, read without checking its signature; undefined when unreadable. */
export function claimedExpiry (accessToken: string): number | undefined {
  try {
    const { exp } = decodeJwt(accessToken)
    return typeof exp === 'number' ? exp * 1000 : undefined
  } catch {
    return undefined
  }
}

/**
 * Whether the core at `uri` serves its signing keys within `deadlineMs`. Concurrent callers share
 * one probe and its answer is kept `reuseMs`, so refused tokens cannot make the service call the
 * core for each of them.
 */
export function coreProbe (uri: string, deadlineMs = 1000, reuseMs = 1000): () => Promise<boolean> {
  const jwks = new URL('.well-known/jwks.json', uri.endsWith('/') ? uri : `${uri}/`)
  let last: { at: number, answer: Promise<boolean> } | undefined
  return async () => {
    const now = Date.now()
    if (last === undefined || now - last.at > reuseMs) {
      last = {
        at: now,
        answer: fetch(jwks, { signal: AbortSignal.timeout(deadlineMs) })
          .then(async (response) => { await response.body?.cancel(); return response.ok }, () => false)
      }
    }
    return await last.answer
  }
}
