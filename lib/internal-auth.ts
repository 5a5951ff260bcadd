// Request signing between the backend and the Sync service (shared secret sync.internalAuthToken).
// The signature covers the method, the path with its query string, a timestamp, the acting user and a
// digest of the body, so a captured request cannot be replayed later, on another path, for another
// user or with another body.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto'

export const INTERNAL_AUTH_HEADERS = {
  timestamp: 'x-sync-timestamp',
  user: 'x-sync-user',
  signature: 'x-sync-signature'
} as const

const SCHEME = 'v1'
/** Clock difference tolerated between the two services, in either direction. */
export const DEFAULT_FRESHNESS_MS = 5 * 60 * 1000

type RequestBody = string | Uint8Array | undefined | null

export interface SignedRequest {
  secret: string
  method: string
  /** Path and query string exactly as sent, e.g. `/internal/changes?userId=...`. */
  path: string
  body?: RequestBody
  /** The user the request acts for; omitted for requests that act for no single user. */
  userId?: string | null
}

type VerifyFailure = 'missing' | 'malformed' | 'stale' | 'forged'

export type VerifyResult =
  | { ok: true, userId: string | null }
  | { ok: false, reason: VerifyFailure }

function bodyDigest (body: RequestBody): string {
  const hash = createHash('sha256')
  if (body != null) hash.update(body)
  return hash.digest('hex')
}

function signature (request: SignedRequest, timestamp: string): Buffer {
  const canonical = [
    SCHEME,
    request.method.toUpperCase(),
    request.path,
    timestamp,
    request.userId ?? '',
    bodyDigest(request.body)
  ].join('\n')
  return createHmac('sha256', request.secret).update(canonical).digest()
}

/** Headers to add to one request. `nowMs` is the caller's clock. */
export function signInternalRequest (request: SignedRequest, nowMs: number): Record<string, string> {
  const timestamp = String(Math.floor(nowMs / 1000))
  const headers: Record<string, string> = {
    [INTERNAL_AUTH_HEADERS.timestamp]: timestamp,
    [INTERNAL_AUTH_HEADERS.signature]: `${SCHEME}=${signature(request, timestamp).toString('hex')}`
  }
  if (request.userId) headers[INTERNAL_AUTH_HEADERS.user] = request.userId
  return headers
}

type HeaderValue = string | string[] | undefined

function single (value: HeaderValue): string | undefined {
  return Array.isArray(value) ? undefined : value
}

const SIGNATURE_PATTERN = /^v1=([0-9a-f]{64})$/
const TIMESTAMP_PATTERN = /^\d{1,12}$/

export function verifyInternalRequest (
  request: Omit<SignedRequest, 'userId'> & { headers: Record<string, HeaderValue> },
  nowMs: number,
  freshnessMs: number = DEFAULT_FRESHNESS_MS
): VerifyResult {
  const timestamp = single(request.headers[INTERNAL_AUTH_HEADERS.timestamp])
  const provided = single(request.headers[INTERNAL_AUTH_HEADERS.signature])
  const userId = single(request.headers[INTERNAL_AUTH_HEADERS.user]) ?? null
  if (timestamp === undefined || provided === undefined) return { ok: false, reason: 'missing' }

  const match = SIGNATURE_PATTERN.exec(provided)
  if (!match?.[1] || !TIMESTAMP_PATTERN.test(timestamp)) return { ok: false, reason: 'malformed' }
  if (Math.abs(nowMs - Number(timestamp) * 1000) > freshnessMs) return { ok: false, reason: 'stale' }

  const expected = signature({ ...request, userId }, timestamp)
  // Both sides are 32-byte HMAC digests (the pattern above fixes the length), so timingSafeEqual
  // compares equal-length buffers and leaks nothing about where they differ.
  const given = Buffer.from(match[1], 'hex')
  if (!timingSafeEqual(given, expected)) return { ok: false, reason: 'forged' }
  return { ok: true, userId }
}
