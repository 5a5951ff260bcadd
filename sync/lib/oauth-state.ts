// The signed `state` of a provider authorization: it names the user, the provider, the connection
// being repaired (if any) and the correlation id, and expires. The OAuth callback verifies it, so
// the intent (`connect` or `reconnect`) is recovered from whether it names a connection.
import { createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Provider } from '../../schemas/sync/index.js'

export const OAUTH_STATE_LIFETIME_MS = 10 * 60_000

export interface OAuthState {
  userId: string
  provider: Provider
  connectionId: string | null
  correlationId: string
  expiresAtMs: number
  /** Names the server-side attempt (PKCE verifier); the callback consumes it, so a state works once. */
  nonce: string
}

export type StateReading =
  | { kind: 'valid', state: OAuthState }
  /** Signed by us but past its lifetime: the person took too long. */
  | { kind: 'expired', state: OAuthState }
  /** Not ours, altered or malformed. */
  | { kind: 'invalid' }

function stateKey (internalAuthToken: string): Buffer {
  // A key of its own, derived from the shared secret, so a state can never pass as a request signature.
  return Buffer.from(hkdfSync('sha256', internalAuthToken, 'calendar-sync', 'oauth-state', 32))
}

function mac (key: Buffer, payload: string): Buffer {
  return createHmac('sha256', key).update(payload).digest()
}

export function signOAuthState (state: OAuthState, internalAuthToken: string): string {
  const payload = Buffer.from(JSON.stringify(state)).toString('base64url')
  return `${payload}.${mac(stateKey(internalAuthToken), payload).toString('base64url')}`
}

/** The state, or null when it is forged, malformed or expired. */
export function verifyOAuthState (token: string, internalAuthToken: string, nowMs: number): OAuthState | null {
  const reading = readOAuthState(token, internalAuthToken, nowMs)
  return reading.kind === 'valid' ? reading.state : null
}

/** What a returned state is: valid, ours but expired, or not ours at all. */
export function readOAuthState (token: string, internalAuthToken: string, nowMs: number): StateReading {
  const [payload, signature, ...rest] = token.split('.')
  if (!payload || !signature || rest.length > 0) return { kind: 'invalid' }
  const given = Buffer.from(signature, 'base64url')
  const expected = mac(stateKey(internalAuthToken), payload)
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { kind: 'invalid' }
  try {
    const raw = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as OAuthState
    const state: OAuthState = {
      userId: raw.userId,
      provider: raw.provider,
      connectionId: raw.connectionId,
      correlationId: raw.correlationId,
      expiresAtMs: raw.expiresAtMs,
      nonce: raw.nonce
    }
    if (typeof state.nonce !== 'string' || typeof state.expiresAtMs !== 'number') return { kind: 'invalid' }
    return state.expiresAtMs >= nowMs ? { kind: 'valid', state } : { kind: 'expired', state }
  } catch {
    return { kind: 'invalid' }
  }
}

/** A single-use nonce for a new authorization attempt. */
export function newNonce (): string {
  return randomBytes(16).toString('base64url')
}

/**
 * The secret of the browser that begins a connect (RFC 9700, section 4.7; RFC 6749, section
 * 10.12): the browser holds it in a cookie, the attempt only its hash, so a callback reached in
 * another browser (a link sent to someone else) cannot finish the attempt.
 */
export function newBrowserBinder (): { binder: string, hash: string } {
  const binder = randomBytes(32).toString('base64url')
  return { binder, hash: binderHash(binder) }
}

function binderHash (binder: string): string {
  return createHash('sha256').update(binder).digest('base64url')
}

/** Whether `presented` is the binder whose hash the attempt keeps; constant time. */
export function binderMatches (presented: string | undefined, storedHash: string | undefined): boolean {
  if (presented === undefined || presented === '' || storedHash === undefined) return false
  const given = Buffer.from(binderHash(presented))
  const expected = Buffer.from(storedHash)
  return given.length === expected.length && timingSafeEqual(given, expected)
}

/** A PKCE (RFC 7636) verifier and its S256 challenge. */
export function pkcePair (): { verifier: string, challenge: string } {
  const verifier = randomBytes(48).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

export function newCorrelationId (): string {
  return randomBytes(6).toString('base64url')
}

/** Where a provider sends the browser back after the grant (served under sync.callbackBaseUrl). */
export function oauthRedirectUri (callbackBaseUrl: string, provider: Provider): string {
  return `${callbackBaseUrl.replace(/\/+$/, '')}/oauth/${provider}/callback`
}
