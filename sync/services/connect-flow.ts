// The Sync service's own OAuth flow for connecting a provider calendar: begin (a signed, single-use,
// short-lived state and a PKCE S256 challenge whose verifier stays here) and the callback (code
// exchange, encrypted credential, import, and the browser's redirect with the outcome).
import type { FastifyBaseLogger } from 'fastify'
import { CountsByKey } from '../../lib/counts-by-key.js'
import type { SyncConfig } from '../../schemas/config.js'
import { BROWSER_BINDER_HEADER } from '../../schemas/sync/index.js'
import type { BeginConnectionRequest, CalDavConnectRequest, CalDavConnectResponse, Provider, SyncBeginConnectionResponse } from '../../schemas/sync/index.js'
import { INTERNAL_AUTH_HEADERS, verifyInternalRequest } from '../../lib/internal-auth.js'
import type { Clock } from '../lib/clock.js'
import { SyncServiceError } from '../lib/errors.js'
import {
  binderMatches, newBrowserBinder, newCorrelationId, newNonce, OAUTH_STATE_LIFETIME_MS, oauthRedirectUri, pkcePair, readOAuthState, signOAuthState
} from '../lib/oauth-state.js'
import type { ProviderRegistry } from '../lib/providers/port.js'
import { CalDavAdapter, CalDavCredentialsRefusedError } from '../providers/caldav/adapter.js'
import { CalDavDiscoveryError } from '../providers/caldav/dav-client.js'
import type { ConnectionStore } from '../stores/connections.js'
import type { CredentialStore } from '../stores/credentials.js'
import type { ProviderCredential } from '../lib/credentials.js'
import type { OAuthAttemptStore } from '../stores/oauth-attempts.js'
import type { Analytics } from '../../lib/analytics.js'
import type { SyncEngine } from './sync-engine.js'
import type { BackendPort } from '../clients/backend.js'

/** The signed-in user of the browser, added (and signed) by the backend's `/sync/*` proxy. */
const SESSION_USER_HEADER = 'x-calendar-session-user'

/**
 * `wrong_browser`: the callback came to a browser other than the one that began (no binder, or
 * another's); `conflict`: the provider account is another user's; `mismatch`: a browser signed in
 * as another user, or the account's email is not the user's.
 */
type CallbackStatus = 'connected' | 'denied' | 'expired' | 'mismatch' | 'conflict' | 'wrong_browser' | 'error'

export interface CallbackRequest {
  provider: Provider
  query: { code?: string | undefined, state?: string | undefined, error?: string | undefined }
  /** Method, path with query and headers as received, to verify the session-user header. */
  method: string
  url: string
  headers: Record<string, string | string[] | undefined>
}

export interface CallbackResult {
  /** Where the browser goes next (302). */
  location: string
  status: CallbackStatus
  intent: 'connect' | 'reconnect'
  correlationId: string
  errorClass: string | null
}

export interface ConnectFlowParts {
  engine: SyncEngine
  /** Asked who may hold a provider account; a connect does not finish without it. */
  backend: BackendPort | null
  providers: ProviderRegistry
  attempts: OAuthAttemptStore
  credentials: CredentialStore
  connections: ConnectionStore
  analytics: Analytics
  settings: Pick<SyncConfig['sync'], 'cloudMutationMode' | 'execution' | 'internalAuthToken' | 'callbackBaseUrl' | 'postConnectRedirectUrl'>
  clock: Clock
  log: FastifyBaseLogger
}

/** The callback cannot finish the connect; `errorClass` names why in the analytics event. */
class CallbackRefusal extends Error {
  readonly status: CallbackStatus
  readonly errorClass: string | null

  constructor (status: CallbackStatus, errorClass: string | null, message: string) {
    super(message)
    this.status = status
    this.errorClass = errorClass
  }
}

function single (value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? undefined : value
}

/** A CalDAV account is its user name at its server (discovered, so spelled the same each time). */
function calDavAccount (credential: ProviderCredential): string {
  return `${credential['username'] ?? ''}@${credential['serverUrl'] ?? ''}`
}

/**
 * A user's CalDAV connects checked at once (per process): each may wait on a silent server for the
 * adapter's deadline, so one user cannot hold more of Sync's outbound requests than this.
 */
const CALDAV_CONNECTS_PER_USER = 2

/** A failed CalDAV connect answers no sooner than this after it began (about a real server's round trips). */
const CALDAV_FAILURE_MIN_MS = 1_000

export class ConnectFlow {
  readonly #parts: ConnectFlowParts
  /** CalDAV connects under way per user: each holds outbound requests to a server the user named. */
  readonly #connectsUnderWay = new CountsByKey()

  constructor (parts: ConnectFlowParts) {
    this.#parts = parts
  }

  /**
   * Connects a CalDAV account (no OAuth): the server is discovered and the password checked before
   * anything is stored; then the credential is stored encrypted and the import queued, as after an
   * OAuth callback. The connection named, or the user's connection of the same server and user
   * name, is repaired instead of a new one being made.
   */
  async connectCalDav (userId: string, request: CalDavConnectRequest): Promise<CalDavConnectResponse> {
    const { settings, providers, credentials, connections, engine, log } = this.#parts
    if (settings.cloudMutationMode === 'maintenance') {
      throw new SyncServiceError('MAINTENANCE', 'Connecting calendars is paused for maintenance; try again later')
    }
    if (settings.execution !== 'active') {
      throw new SyncServiceError('EXECUTION_PASSIVE', 'This Sync service runs passively (sync.execution) and cannot connect providers')
    }
    const adapter = providers.caldav
    if (!(adapter instanceof CalDavAdapter)) {
      throw new SyncServiceError('PROVIDER_NOT_CONFIGURED', 'CalDAV is not configured on this Sync service (it needs the backend block)')
    }
    if (!credentials.available) {
      throw new SyncServiceError('CREDENTIAL_ENCRYPTION_KEY_MISSING', 'sync.credentialEncryptionKey is not set, so a CalDAV password cannot be stored')
    }
    const own = (await connections.listByUser(userId)).filter((connection) => connection.provider === 'caldav')
    let repair: string | null = null
    if (request.connectionId !== undefined) {
      if (!own.some((connection) => connection._id.toHexString() === request.connectionId)) {
        throw new SyncServiceError('CONNECTION_NOT_FOUND', 'The user has no such CalDAV connection')
      }
      repair = request.connectionId
    }
    if (!this.#connectsUnderWay.tryTake(userId, CALDAV_CONNECTS_PER_USER)) {
      throw new SyncServiceError('RATE_LIMITED', 'Two connects of yours are under way; try again once one has finished')
    }
    let credential
    const began = Date.now()
    try {
      credential = await adapter.verifyAccount({ serverUrl: request.serverUrl, username: request.username, password: request.password })
    } catch (error) {
      if (error instanceof CalDavCredentialsRefusedError || error instanceof CalDavDiscoveryError) {
        // What failed is the operator's to read, not the caller's: the answer is one, and comes no
        // sooner than a round trip to a real server would, whatever listens at the address.
        log.info({ userId, reason: error.message }, 'CalDAV connect failed')
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, began + CALDAV_FAILURE_MIN_MS - Date.now())))
        throw new SyncServiceError('CALDAV_CONNECT_FAILED', 'The CalDAV server did not take this account: check the server address, the user name and the app password', repair ?? undefined)
      }
      throw error
    } finally {
      this.#connectsUnderWay.release(userId)
    }
    const account = calDavAccount(credential)
    if (repair === null) {
      for (const connection of own) {
        // A revoked connection's credential is gone; older connections only have their credential.
        const known = connection.account ?? calDavAccount(await credentials.load(connection._id.toHexString()) ?? {})
        if (known === account) repair = connection._id.toHexString()
      }
    }
    const calendars = (await adapter.listCalendars({ connectionId: repair ?? 'new', userId, credential })).length
    const record = await engine.authorize(userId, 'caldav', credential, repair, account)
    return { connectionId: record._id.toHexString(), created: repair === null, calendars }
  }

  /**
   * Starts a provider authorization and returns the URL to send the browser to, with the binder
   * that browser is to hold. A reconnect names its connection, or repairs the user's newest
   * connection of the provider.
   */
  async begin (userId: string, request: BeginConnectionRequest): Promise<SyncBeginConnectionResponse> {
    const { settings, providers, credentials, connections, attempts, clock } = this.#parts
    const { provider, intent } = request
    if (settings.cloudMutationMode === 'maintenance') {
      throw new SyncServiceError('MAINTENANCE', 'Connecting calendars is paused for maintenance; try again later')
    }
    if (settings.execution !== 'active') {
      throw new SyncServiceError('EXECUTION_PASSIVE', 'This Sync service runs passively (sync.execution) and cannot connect providers')
    }
    if (provider === 'caldav') {
      throw new SyncServiceError('VALIDATION', 'A CalDAV account connects with its server URL, user name and app password (POST /api/connections/caldav), not through an authorization')
    }
    const adapter = providers[provider]
    if (!adapter || !credentials.available) {
      throw new SyncServiceError('PROVIDER_NOT_CONFIGURED', `Provider ${provider} is not configured on this Sync service`)
    }

    let connectionId = request.connectionId ?? null
    if (connectionId !== null) {
      const named = await connections.get(connectionId)
      if (!named || named.userId !== userId || named.provider !== provider) {
        throw new SyncServiceError('CONNECTION_NOT_FOUND', 'The user has no such connection of this provider')
      }
    } else if (intent === 'reconnect') {
      const newest = (await connections.listByUser(userId)).filter((connection) => connection.provider === provider).at(-1)
      if (!newest) throw new SyncServiceError('CONNECTION_NOT_FOUND', 'The user has no connection of this provider to reconnect')
      connectionId = newest._id.toHexString()
    }

    const correlationId = request.correlationId ?? newCorrelationId()
    const expiresAt = new Date(clock.now().getTime() + OAUTH_STATE_LIFETIME_MS)
    const nonce = newNonce()
    const pkce = pkcePair()
    const binder = newBrowserBinder()
    await attempts.save({ _id: nonce, userId, provider, codeVerifier: pkce.verifier, browserBinderHash: binder.hash, expiresAt })
    const state = signOAuthState({ userId, provider, connectionId, correlationId, expiresAtMs: expiresAt.getTime(), nonce }, settings.internalAuthToken)
    // The callback recovers the intent from whether the signed state names a connection.
    const resolvedIntent = connectionId === null ? 'connect' : 'reconnect'
    return {
      authorizationUrl: adapter.authorizationUrl({
        state,
        redirectUri: oauthRedirectUri(settings.callbackBaseUrl, provider),
        codeChallenge: pkce.challenge,
        intent: resolvedIntent
      }),
      correlationId,
      intent: resolvedIntent,
      connectionId,
      browserBinder: binder.binder
    }
  }

  /** Finishes an authorization the provider sent the browser back from; never throws. */
  async callback (request: CallbackRequest): Promise<CallbackResult> {
    const { settings, clock, analytics, log } = this.#parts
    const reading = readOAuthState(request.query.state ?? '', settings.internalAuthToken, clock.now().getTime())
    const state = reading.kind === 'invalid' ? null : reading.state
    const intent = state?.connectionId ? 'reconnect' : 'connect'
    const correlationId = state?.correlationId ?? newCorrelationId()

    let status: CallbackStatus = 'connected'
    let errorClass: string | null = null
    try {
      await this.#finish(request, reading)
    } catch (error) {
      if (error instanceof CallbackRefusal) {
        status = error.status
        errorClass = error.errorClass
        log.info({ provider: request.provider, status, correlationId, reason: error.message }, 'provider connect not finished')
      } else {
        status = 'error'
        errorClass = error instanceof Error ? error.name : 'Error'
        log.error({ provider: request.provider, correlationId, err: error }, 'provider connect failed')
      }
    }

    analytics.capture({
      name: 'oauth_callback',
      distinctId: state?.userId ?? correlationId,
      properties: {
        provider: request.provider,
        outcome: status,
        intent,
        correlationId,
        ...(status === 'error' && errorClass !== null ? { errorClass } : {})
      }
    })

    const location = new URL(settings.postConnectRedirectUrl ?? settings.callbackBaseUrl)
    location.searchParams.set('status', status)
    location.searchParams.set('provider', request.provider)
    location.searchParams.set('intent', intent)
    location.searchParams.set('cid', correlationId)
    return { location: location.toString(), status, intent, correlationId, errorClass: status === 'error' ? errorClass : null }
  }

  async #finish (request: CallbackRequest, reading: ReturnType<typeof readOAuthState>): Promise<void> {
    const { attempts, providers, credentials, engine, settings, clock } = this.#parts
    if (reading.kind === 'invalid') throw new CallbackRefusal('error', 'InvalidStateError', 'the state is not one this service signed')
    const state = reading.state
    if (state.provider !== request.provider) throw new CallbackRefusal('error', 'InvalidStateError', 'the state belongs to another provider')
    // Consumed first, whatever follows: a state works once.
    const attempt = await attempts.consume(state.nonce, clock.now())
    if (reading.kind === 'expired' || attempt === null || attempt.userId !== state.userId) {
      throw new CallbackRefusal('expired', null, 'the state expired or was used already')
    }
    if (!binderMatches(single(request.headers[BROWSER_BINDER_HEADER]), attempt.browserBinderHash)) {
      throw new CallbackRefusal('wrong_browser', null, 'the callback came to a browser other than the one that began the connect')
    }
    if (request.query.error !== undefined) {
      if (request.query.error === 'access_denied') throw new CallbackRefusal('denied', null, 'the person denied access')
      throw new CallbackRefusal('error', 'ProviderAuthorizationError', 'the provider refused the authorization')
    }
    this.#checkSessionUser(request, state.userId)
    if (!request.query.code) throw new CallbackRefusal('error', 'MissingCodeError', 'the provider sent no code')

    const adapter = providers[request.provider]
    if (!adapter) throw new CallbackRefusal('error', 'ProviderNotConfiguredError', 'no adapter for this provider')
    const granted = await adapter.exchangeCode({
      code: request.query.code,
      codeVerifier: attempt.codeVerifier,
      redirectUri: oauthRedirectUri(settings.callbackBaseUrl, request.provider)
    })
    let credential = granted.credential
    if (!granted.refreshTokenIssued) {
      // A repeated consent yields no refresh token: a reconnect keeps the one it has.
      const stored = state.connectionId === null ? null : await credentials.load(state.connectionId)
      const refreshToken = stored?.['refreshToken']
      if (!refreshToken) throw new CallbackRefusal('error', 'MissingRefreshTokenError', 'the provider issued no refresh token and none is stored')
      credential = { ...credential, refreshToken }
    }
    await this.#claimAccount(state.userId, request.provider, credential)
    await engine.authorize(state.userId, request.provider, credential, state.connectionId)
  }

  /**
   * The direct connect's identity rules, asked of the backend before anything is stored: an
   * account another user holds is a conflict, and its email must be the user's (a mismatch).
   */
  async #claimAccount (userId: string, provider: Provider, credential: ProviderCredential): Promise<void> {
    const backend = this.#parts.backend
    if (backend === null) throw new CallbackRefusal('error', 'BackendMissingError', 'no backend to ask who holds the provider account')
    if (provider === 'caldav') throw new CallbackRefusal('error', 'InvalidStateError', 'CalDAV does not connect through an authorization')
    const accountId = credential['subject']
    if (accountId === undefined || accountId === '') throw new CallbackRefusal('error', 'MissingAccountIdError', 'the provider named no account (no sub in its ID token)')
    const email = credential['email']
    const { outcome } = await backend.claimAccount({ userId, provider, accountId, ...(email === undefined ? {} : { email }) })
    if (outcome === 'conflict') throw new CallbackRefusal('conflict', null, 'the provider account is another user\'s')
    if (outcome === 'mismatch') throw new CallbackRefusal('mismatch', null, 'the provider account\'s email is not the user\'s')
  }

  /**
   * The backend's proxy names the browser's signed-in user in x-calendar-session-user (or
   * x-sync-user), signed like
   * an internal request (lib/internal-auth.ts) over this request's method and path. A signed-in
   * user other than the one who began the connect is a mismatch; an unsigned claim is refused.
   */
  #checkSessionUser (request: CallbackRequest, stateUser: string): void {
    // The backend's proxy may name the user in the internal-auth header itself (x-sync-user).
    const claimed = single(request.headers[SESSION_USER_HEADER]) ?? single(request.headers[INTERNAL_AUTH_HEADERS.user])
    if (claimed === undefined || claimed === '') return
    const verified = verifyInternalRequest({
      secret: this.#parts.settings.internalAuthToken,
      method: request.method,
      path: request.url,
      body: undefined,
      headers: {
        [INTERNAL_AUTH_HEADERS.timestamp]: request.headers[INTERNAL_AUTH_HEADERS.timestamp],
        [INTERNAL_AUTH_HEADERS.signature]: request.headers[INTERNAL_AUTH_HEADERS.signature],
        [INTERNAL_AUTH_HEADERS.user]: claimed
      }
    }, this.#parts.clock.now().getTime())
    if (!verified.ok) throw new CallbackRefusal('error', 'SessionUserUnverifiedError', `the session-user header is not signed (${verified.reason})`)
    if (claimed !== stateUser) throw new CallbackRefusal('mismatch', null, 'the browser is signed in as another user than the one who began the connect')
  }
}
