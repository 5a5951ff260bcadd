import { refuseProduction } from '../stand-in/index.js'
import { COMMON_LOG_REDACT, createServer, notificationRetries, positive, startStandIn, tokenLifetimes } from '../stand-in/server.js'
import type { StandInOptions, StartedStandIn } from '../stand-in/server.js'
import { googleApp } from './app.js'
import type { ClientRegistration } from './identity.js'
import { createSigningKeys } from './keys.js'
import { GoogleState } from './state.js'
import type { AccountSetup } from './state.js'

export type { AccountSetup, } from './state.js'

export interface GoogleOptions extends StandInOptions<ClientRegistration, AccountSetup> {
  /** Accounts to create at start (each gets its primary calendar, plus `calendars`). */
  accounts?: AccountSetup[]
  /** Milliseconds since the epoch; tests pass their own to move time (token and channel expiry). */
  clock?: () => number
  /** Default 3599, the `expires_in` Google answers. */
  accessTokenLifetimeSec?: number
  /** Default 600 (RFC 6749 recommends at most ten minutes; Google's own is shorter and undocumented). */
  codeLifetimeSec?: number
  /** Retries of a push notification answered 500/502/503/504 or not answered. Default 3. */
  notificationRetries?: number
  /** Default 5000. */
  notificationTimeoutMs?: number
}

/** The control surface in process: the same operations as the HTTP paths under /_control. */
type GoogleControl = Pick<GoogleState,
  'registerClient' | 'createAccount' | 'listAccounts' | 'addCalendar' | 'setDefaultReminders' | 'deleteCalendar' | 'insertEvent' | 'patchEvent' |
  'deleteEvent' | 'seed' | 'storedEvents' | 'revoke' | 'expireAccessTokens' | 'expireSyncTokens' | 'armFault' | 'counts' |
  'resetCounts' | 'listChannels'>

export interface GoogleStandIn extends StartedStandIn {
  /** The one origin of every endpoint, e.g. `http://127.0.0.1:PORT` (also the ID tokens' `iss`). */
  url: string
  /** OpenID Connect discovery document. */
  discoveryUrl: string
  /** What Google's API clients call `rootUrl` (`https://www.googleapis.com/` in production). */
  rootUrl: string
  control: GoogleControl
}

// Values of these query parameters are secrets (or single-use credentials) and never reach a log line.
const SECRET_PARAMETERS = ['token', 'access_token', 'oauth_token', 'refresh_token', 'code', 'code_verifier', 'client_secret', 'id_token']

/** Redacts what must never reach a log line if request headers are ever logged. */
export const LOG_REDACT = [...COMMON_LOG_REDACT, 'req.headers["x-goog-channel-token"]']

export async function startGoogle (options: GoogleOptions = {}): Promise<GoogleStandIn> {
  refuseProduction('dev/google')
  const now = options.clock ?? Date.now
  const lifetimes = tokenLifetimes(options)
  const retries = notificationRetries(options.notificationRetries)

  const app = createServer(options.logger, SECRET_PARAMETERS, LOG_REDACT)
  const state = new GoogleState({
    now,
    keys: await createSigningKeys(new Date(now())),
    lifetimes,
    delivery: {
      retries,
      retryBaseDelayMs: positive(options.notificationRetryDelayMs, 'notificationRetryDelayMs', 1000),
      timeoutMs: positive(options.notificationTimeoutMs, 'notificationTimeoutMs', 5000)
    },
    log: app.log
  })
  const started = await startStandIn(app, {
    state,
    plugin: googleApp,
    delivery: state.channels,
    clients: options.clients,
    accounts: options.accounts,
    port: options.port,
    what: 'google stand-in'
  })
  return {
    ...started,
    discoveryUrl: `${started.url}/.well-known/openid-configuration`,
    rootUrl: `${started.url}/`,
    control: state
  }
}
