import { retryAfterMs } from '../../../lib/backoff.js'
import { grantsMicrosoftScope, MICROSOFT_MAILBOX_SETTINGS_SCOPE, MICROSOFT_SCOPES } from '../../../lib/identity-providers.js'
import type { ProviderCredential } from '../../lib/credentials.js'
import { classifyFailure, type GraphFailure, type MicrosoftFailureKind } from '../../lib/providers/microsoft-mapping.js'
import { ProviderAuthorizationRevokedError, ProviderUnavailableError, providerError, type ProviderContext, type ProviderFailureKind } from '../../lib/providers/port.js'
import { microsoftFetch } from '../buffered-fetch.js'
import { FreshGrants } from '../fresh-grants.js'
import { setBounded } from '../../lib/bounded-map.js'

/** The scopes asked for at consent (here and at a Microsoft sign-in). */
export const CONSENT_SCOPES = MICROSOFT_SCOPES
// A refresh may only name scopes the grant holds (else AADSTS65001, taken for a revocation), and grants
// made before the mailbox scope was asked for lack it (a grant without it keeps calendars in UTC): on
// refresh it is asked for only when the stored grant has it.
const SCOPES = CONSENT_SCOPES.filter((scope) => scope !== MICROSOFT_MAILBOX_SETTINGS_SCOPE)
/** An access token this close to its expiry is refreshed first. */
const EXPIRY_MARGIN_MS = 60_000
/** Connections whose access token is kept; the oldest goes first. */
const CLIENT_CACHE_SIZE = 1000

export interface MicrosoftGraphOptions {
  clientId: string
  clientSecret: string
  /** Development only: the one origin of a stand-in serving both Microsoft hosts' paths. */
  endpointBase?: string | undefined
  /** Deadline of one Microsoft request. */
  timeoutMs?: number
}

export interface TokenAnswer {
  access_token?: string
  refresh_token?: string
  expires_in?: number
  scope?: string
  id_token?: string
}

/** A failed Microsoft call, kept without the request (its headers hold the access token). */
class MicrosoftCallError extends Error {
  readonly failure: GraphFailure
  readonly retryAfterMs: number | null

  constructor (what: string, failure: GraphFailure, retryAfterMs: number | null) {
    super(`${what}: ${failure.status ?? 'no answer'}${failure.code ? ` ${failure.code}` : ''}`)
    this.failure = failure
    this.retryAfterMs = retryAfterMs
  }
}

/** How the port reads Microsoft's classes of failure. */
const MICROSOFT_FAILURES: Record<MicrosoftFailureKind, ProviderFailureKind> = {
  revoked: 'revoked', cursorExpired: 'cursorExpired', unavailable: 'unavailable', notFound: 'notFound', conflict: 'conflict', unauthorized: 'rejected', other: 'rejected'
}

/** The port's error for a failed call. */
function translate (error: MicrosoftCallError): Error {
  return providerError({ kind: MICROSOFT_FAILURES[classifyFailure(error.failure)], who: 'Microsoft', detail: error.message, status: error.failure.status, retryAfterMs: error.retryAfterMs })
}

/**
 * How the Microsoft adapter talks to Microsoft: the identity platform's token endpoint and Graph
 * calls made with a connection's access token, refreshed (and the rotated refresh token stored)
 * when due. Every failure is the port's error; no error carries a token.
 */
export class MicrosoftGraph {
  /** The identity platform's origin. */
  readonly login: string
  /** Graph v1.0's base URL. */
  readonly base: string
  readonly #options: MicrosoftGraphOptions
  /** Access tokens by connection, with the refresh token they came from. */
  readonly #tokens = new Map<string, { refreshToken: string, accessToken: string, expiresAt: number }>()
  readonly #refreshing = new Map<string, Promise<string>>()
  readonly #freshGrants = new FreshGrants()

  constructor (options: MicrosoftGraphOptions) {
    this.#options = options
    const origin = options.endpointBase === undefined ? null : new URL(options.endpointBase).origin
    this.login = origin ?? 'https://login.microsoftonline.com'
    this.base = `${origin ?? 'https://graph.microsoft.com'}/v1.0`
  }

  /** Keeps the access token a code exchange answered for the new connection's first call (fresh-grants.ts). */
  keepFreshGrant (tokens: TokenAnswer): void {
    if (tokens.refresh_token && tokens.access_token) this.#freshGrants.keep(tokens.refresh_token, tokens.access_token, Date.now() + (tokens.expires_in ?? 3599) * 1000)
  }

  /** Drops the connection's access token, so the next call refreshes it. */
  forgetAccessToken (connectionId: string): void {
    this.#tokens.delete(connectionId)
  }

  /** One identity-platform token request; errors are the port's. */
  async token (what: string, form: Record<string, string>): Promise<TokenAnswer> {
    const body = new URLSearchParams({ client_id: this.#options.clientId, client_secret: this.#options.clientSecret, ...form })
    const response = await this.#fetch(what, `${this.login}/common/oauth2/v2.0/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: body.toString()
    })
    const answer = await this.#json(what, response)
    if (!response.ok) {
      const code = typeof (answer as { error?: unknown }).error === 'string' ? (answer as { error: string }).error : null
      throw translate(new MicrosoftCallError(what, { status: response.status, code }, retryAfterOf(response)))
    }
    return answer as TokenAnswer
  }

  /**
   * An access token for the connection. Each refresh answers a new refresh token, which is stored
   * (and put in the context, so the rest of the job uses it) before the access token is used.
   */
  async #accessToken (context: ProviderContext): Promise<string> {
    const refreshToken = context.credential['refreshToken']
    if (!refreshToken) throw new ProviderAuthorizationRevokedError('the stored Microsoft credential has no refresh token')
    const cached = this.#tokens.get(context.connectionId)
    if (cached !== undefined && cached.refreshToken === refreshToken && cached.expiresAt > Date.now() + EXPIRY_MARGIN_MS) return cached.accessToken
    const fresh = this.#freshGrants.take(refreshToken)
    if (fresh !== undefined) {
      this.#remember(context.connectionId, { refreshToken, ...fresh })
      return fresh.accessToken
    }
    // Requests running side by side share one refresh: Microsoft rotates the refresh token on use.
    const inFlight = this.#refreshing.get(context.connectionId)
    if (inFlight !== undefined) return await inFlight
    const refreshing = this.#refresh(context, refreshToken)
    this.#refreshing.set(context.connectionId, refreshing)
    try {
      return await refreshing
    } finally {
      this.#refreshing.delete(context.connectionId)
    }
  }

  async #refresh (context: ProviderContext, refreshToken: string): Promise<string> {
    const scopes = grantsMicrosoftScope(context.credential['scope'] ?? '', MICROSOFT_MAILBOX_SETTINGS_SCOPE) ? CONSENT_SCOPES : SCOPES
    const tokens = await this.token('token refresh', { grant_type: 'refresh_token', refresh_token: refreshToken, scope: scopes.join(' ') })
    if (!tokens.access_token) throw new Error('Microsoft answered a refresh without an access token')
    let current = refreshToken
    if (tokens.refresh_token && tokens.refresh_token !== refreshToken) {
      const renewed: ProviderCredential = { ...context.credential, refreshToken: tokens.refresh_token, ...(tokens.scope ? { scope: tokens.scope } : {}) }
      await context.saveCredential?.(renewed)
      context.credential = renewed
      current = tokens.refresh_token
    }
    this.#remember(context.connectionId, { refreshToken: current, accessToken: tokens.access_token, expiresAt: Date.now() + (tokens.expires_in ?? 3599) * 1000 })
    return tokens.access_token
  }

  #remember (connectionId: string, token: { refreshToken: string, accessToken: string, expiresAt: number }): void {
    setBounded(this.#tokens, connectionId, token, CLIENT_CACHE_SIZE)
  }

  /**
   * One Graph call for a connection. An access token Graph refuses (revoked, or expired by its clock
   * rather than ours) is dropped and the call made once more with a fresh one; a dead grant then
   * shows as invalid_grant. Throttling is not retried here: the job ladder does that.
   */
  async call<T> (context: ProviderContext, what: string, method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const accessToken = await this.#accessToken(context)
      const response = await this.#fetch(what, url, {
        method,
        headers: {
          authorization: `Bearer ${accessToken}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      if (response.status === 401 && attempt === 0) {
        await response.body?.cancel()
        this.#tokens.delete(context.connectionId)
        continue
      }
      if (response.status === 204) return undefined as T
      const answer = await this.#json(what, response)
      if (response.ok) return answer as T
      const error = (answer as { error?: { code?: unknown } }).error
      const code = typeof error?.code === 'string' ? error.code : null
      throw translate(new MicrosoftCallError(what, { status: response.status, code }, retryAfterOf(response)))
    }
  }

  async #fetch (what: string, url: string, init: RequestInit): Promise<Response> {
    try {
      return await microsoftFetch(url, { ...init, signal: AbortSignal.timeout(this.#options.timeoutMs ?? 30_000) })
    } catch {
      // The cause may quote the request; only what failed is kept.
      throw new ProviderUnavailableError(`Microsoft did not answer (${what})`, null)
    }
  }

  async #json (what: string, response: Response): Promise<unknown> {
    try {
      const text = await response.text()
      return text === '' ? {} : JSON.parse(text) as unknown
    } catch {
      if (response.status === 429 || response.status >= 500) throw translate(new MicrosoftCallError(what, { status: response.status, code: null }, retryAfterOf(response)))
      throw new Error(`Microsoft answered ${what} with a body that is not JSON (${response.status})`)
    }
  }
}

// Graph sends Retry-After with its 429 and 503 answers (Microsoft Graph throttling guidance).
function retryAfterOf (response: Response): number | null {
  return retryAfterMs(response.headers.get('retry-after'), new Date())
}
