import { refuseProduction } from '../stand-in/index.js'
import { COMMON_LOG_REDACT, createServer, notificationRetries, positive, startStandIn, tokenLifetimes } from '../stand-in/server.js'
import type { StandInOptions, StartedStandIn } from '../stand-in/server.js'
import { microsoftApp } from './app.js'
import type { ClientRegistration } from './identity.js'
import { createSigningKeys } from './keys.js'
import { MicrosoftState } from './state.js'
import type { AccountSetup } from './state.js'

export type { AccountSetup, AccountView, CalendarView, SeedGenerator, SeedResult, SubscriptionView } from './state.js'
export type { ClientRegistration } from './identity.js'
export type { FaultInput } from './faults.js'
export type { LifecycleEvent } from './subscriptions.js'
export { CONSUMERS_TENANT } from './identity.js'
export { ianaZone, windowsZones } from './zones.js'

export interface MicrosoftOptions extends StandInOptions<ClientRegistration, AccountSetup> {
  /** Accounts to create at start (each gets its default calendar "Calendar", plus `calendars`). */
  accounts?: AccountSetup[]
  /** Milliseconds since the epoch; tests pass their own to move time (token and subscription expiry). */
  clock?: () => number
  /** Default 3599 (the documented example; Microsoft's real lifetime varies from 60 to 90 minutes). */
  accessTokenLifetimeSec?: number
  /** Default 600 (codes "expire after about 10 minutes"). */
  codeLifetimeSec?: number
  /** Default 90 days: a refresh token unused that long answers AADSTS700082. */
  refreshTokenLifetimeSec?: number
  /** How long a notification may take to be acknowledged. Default 3000 (Graph's 3 seconds). */
  notificationTimeoutMs?: number
  /** How long the validation handshake may take. Default 10000 (Graph's 10 seconds). */
  validationTimeoutMs?: number
  /** Retries of a notification not acknowledged with a 2xx. Default 3. */
  notificationRetries?: number
  /** Most notifications in one POST. Default 100. */
  notificationBatchSize?: number
}

/** The control surface in process: the same operations as the HTTP paths under /_control. */
export type MicrosoftControl = Pick<MicrosoftState,
  'registerClient' | 'createAccount' | 'listAccounts' | 'addCalendar' | 'deleteCalendar' | 'insertEvent' | 'patchEvent' | 'deleteEvent' |
  'seed' | 'storedEvents' | 'revoke' | 'expireAccessTokens' | 'expireRefreshTokens' | 'expireDeltaTokens' | 'sendLifecycle' | 'armFault' |
  'counts' | 'resetCounts' | 'listSubscriptions'>

export interface MicrosoftStandIn extends StartedStandIn {
  /** The one origin of every endpoint: login.microsoftonline.com and graph.microsoft.com both map here. */
  url: string
  /** OpenID Connect discovery of the `common` tenant. */
  discoveryUrl: string
  /** Where Graph's v1.0 paths start (`https://graph.microsoft.com/v1.0` in production). */
  graphUrl: string
  control: MicrosoftControl
}

// Values of these query parameters are secrets (or single-use credentials) and never reach a log line.
const SECRET_PARAMETERS = ['code', 'code_verifier', 'client_secret', 'refresh_token', 'access_token', 'id_token', 'validationToken']

/** Redacts what must never reach a log line if request headers are ever logged. */
export const LOG_REDACT = COMMON_LOG_REDACT

export async function startMicrosoft (options: MicrosoftOptions = {}): Promise<MicrosoftStandIn> {
  refuseProduction('dev/microsoft')
  const retries = notificationRetries(options.notificationRetries)
  const batchSize = positive(options.notificationBatchSize, 'notificationBatchSize', 100)

  const app = createServer(options.logger, SECRET_PARAMETERS, LOG_REDACT)
  const state = new MicrosoftState({
    now: options.clock ?? Date.now,
    keys: await createSigningKeys(),
    lifetimes: {
      ...tokenLifetimes(options),
      refreshTokenSec: positive(options.refreshTokenLifetimeSec, 'refreshTokenLifetimeSec', 90 * 24 * 3600)
    },
    delivery: {
      timeoutMs: positive(options.notificationTimeoutMs, 'notificationTimeoutMs', 3000),
      validationTimeoutMs: positive(options.validationTimeoutMs, 'validationTimeoutMs', 10_000),
      retries,
      retryBaseDelayMs: positive(options.notificationRetryDelayMs, 'notificationRetryDelayMs', 1000),
      batchSize: Math.floor(batchSize)
    },
    log: app.log
  })
  const started = await startStandIn(app, {
    state,
    plugin: microsoftApp,
    delivery: state.subscriptions,
    clients: options.clients,
    accounts: options.accounts,
    port: options.port,
    what: 'microsoft stand-in'
  })
  return {
    ...started,
    discoveryUrl: `${started.url}/common/v2.0/.well-known/openid-configuration`,
    graphUrl: `${started.url}/v1.0`,
    control: state
  }
}
