import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { Agent, Pool, setGlobalDispatcher, type Dispatcher } from 'undici'
import { decodeJwt } from 'jose'
import { Counter, Histogram, LATENCY_BUCKETS, type Registry } from '../lib/metrics.js'

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

/** What undici publishes of a request on its diagnostics channels (the fields read here). */
interface PublishedRequest { origin: string | URL, method: string, path: string }
interface PublishedMessage { request: PublishedRequest, response?: { statusCode: number } }

/** The core's paths the library calls are its API's; ids in them become `:id`, and past this many the rest are `other`. */
const MAX_CORE_PATHS = 40

/**
 * Times every call to the core at `uri` (the library's, through undici's diagnostics channels,
 * which see the process's fetch) and counts those that failed: no answer, or a 5xx. Returns
 * the unsubscription.
 */
export function observeSessionCoreCalls (uri: string, registry: Registry): () => void {
  const origin = new URL(uri).origin
  const duration = new Histogram({ name: 'session_core_request_duration_seconds', help: 'Time the session core took to answer (to its headers), by path', labelNames: ['path'], buckets: LATENCY_BUCKETS, registers: [registry] })
  const failures = new Counter({ name: 'session_core_request_failures_total', help: 'Calls to the session core with no answer or a 5xx, by path', labelNames: ['path'], registers: [registry] })
  const started = new WeakMap<PublishedRequest, number>()
  const paths = new Set<string>()
  const pathOf = (request: PublishedRequest): string => {
    const path = (request.path.split('?')[0] ?? '/').split('/').map((segment) => /^(\d+|[0-9a-f-]{8,})$/i.test(segment) ? ':id' : segment).join('/')
    if (paths.has(path)) return path
    if (paths.size >= MAX_CORE_PATHS) return 'other'
    paths.add(path)
    return path
  }
  const ours = (request: PublishedRequest): boolean => (typeof request.origin === 'string' ? request.origin : request.origin.origin) === origin
  const onCreate = (message: unknown): void => {
    const { request } = message as PublishedMessage
    if (ours(request)) started.set(request, performance.now())
  }
  const onHeaders = (message: unknown): void => {
    const { request, response } = message as PublishedMessage
    const at = started.get(request)
    if (at === undefined) return
    const path = pathOf(request)
    duration.observe({ path }, (performance.now() - at) / 1000)
    if ((response?.statusCode ?? 0) >= 500) failures.inc({ path })
  }
  const onError = (message: unknown): void => {
    const { request } = message as PublishedMessage
    if (!started.has(request)) return
    started.delete(request)
    failures.inc({ path: pathOf(request) })
  }
  subscribe('undici:request:create', onCreate)
  subscribe('undici:request:headers', onHeaders)
  subscribe('undici:request:error', onError)
  return () => {
    unsubscribe('undici:request:create', onCreate)
    unsubscribe('undici:request:headers', onHeaders)
    unsubscribe('undici:request:error', onError)
  }
}
