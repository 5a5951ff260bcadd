// The signed `state` of a provider authorization: it names the user, the provider, the connection
// being repaired (if any) and the correlation id, and expires. The OAuth callback verifies it, so
// the intent (`connect` or `reconnect`) is recovered from whether it names a connection.
import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Provider } from '../../schemas/sync/index.js'

export const OAUTH_STATE_LIFETIME_MS = 10 * 60_000

export interface OAuthState {
  userId: string
  provider: Provider
  connectionId: string | null
  correlationId: string
  expiresAtMs: number
}

function stateKey (internalAuthToken: string): Buffer {
  // A key of its own, derived from the shared secret, so a state can never pass as a request signature.
  return Buffer.from(hkdfSync('sha256', internalAuthToken, 'calendar-sync', 'oauth-state', 32))
}

function mac (key: Buffer, payload: string): Buffer {
  return createHmac('sha256', key).update(payload).digest()
}

export function signOAuthState (state: OAuthState, internalAuthToken: string): string {
  const payload = Buffer.from(JSON.stringify({ ...state, nonce: randomBytes(12).toString('base64url') })).toString('base64url')
  return `${payload}.${mac(stateKey(internalAuthToken), payload).toString('base64url')}`
}

/** The state, or null when it is forged, malformed or expired. */
export function verifyOAuthState (token: string, internalAuthToken: string, nowMs: number): OAuthState | null {
  const [payload, signature, ...rest] = token.split('.')
  if (!payload || !signature || rest.length > 0) return null
  const given = Buffer.from(signature, 'base64url')
  const expected = mac(stateKey(internalAuthToken), payload)
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null
  try {
    const state = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as OAuthState
    return state.expiresAtMs >= nowMs
      ? { userId: state.userId, provider: state.provider, connectionId: state.connectionId, correlationId: state.correlationId, expiresAtMs: state.expiresAtMs }
      : null
  } catch {
    return null
  }
}

export function newCorrelationId (): string {
  return randomBytes(6).toString('base64url')
}

/** Where a provider sends the browser back after the grant (served under sync.callbackBaseUrl). */
export function oauthRedirectUri (callbackBaseUrl: string, provider: Provider): string {
  return `${callbackBaseUrl.replace(/\/+$/, '')}/oauth/${provider}/callback`
}
