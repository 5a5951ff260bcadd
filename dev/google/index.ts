import { listenOnLoopback, refuseProduction } from '../stand-in/index.js'
import Fastify from 'fastify'
import type { FastifyServerOptions } from 'fastify'
import { googleApp } from './app.js'
import type { ClientRegistration } from './identity.js'
import { createSigningKeys } from './keys.js'
import { GoogleState } from './state.js'
import type { AccountSetup } from './state.js'

export type { AccountSetup, AccountView, CalendarView, ChannelView, SeedGenerator, SeedResult } from './state.js'
export type { ClientRegistration } from './identity.js'
export type { FaultInput } from './faults.js'

export interface GoogleOptions {
  /** 0 or absent: any free port. */
  port?: number
  clients?: ClientRegistration[]
  /** Accounts to create at start (each gets its primary calendar, plus `calendars`). */
  accounts?: AccountSetup[]
  /** Milliseconds since the epoch; tests pass their own to move time (token and channel expiry). */
  clock?: () => number
  /** Default 3599, the `expires_in` Google answers. */
  accessTokenLifetimeSec?: number
  /** Default 3600. */
  idTokenLifetimeSec?: number
  /** Default 600 (RFC 6749 recommends at most ten minutes; Google's own is shorter and undocumented). */
  codeLifetimeSec?: number
  /** Retries of a push notification answered 500/502/503/504 or not answered. Default 3. */
  notificationRetries?: number
  /** First retry delay, doubled each time. Default 1000. */
  notificationRetryDelayMs?: number
  /** Default 5000. */
  notificationTimeoutMs?: number
  logger?: FastifyServerOptions['logger']
}

/** The control surface in process: the same operations as the HTTP paths under /_control. */
export type GoogleControl = Pick<GoogleState,
  'registerClient' | 'createAccount' | 'listAccounts' | 'addCalendar' | 'deleteCalendar' | 'insertEvent' | 'patchEvent' |
  'deleteEvent' | 'seed' | 'storedEvents' | 'revoke' | 'expireAccessTokens' | 'expireSyncTokens' | 'armFault' | 'counts' |
  'resetCounts' | 'listChannels'>

export interface GoogleStandIn {
  /** The one origin of every endpoint, e.g. `http://127.0.0.1:PORT` (also the ID tokens' `iss`). */
  url: string
  /** OpenID Connect discovery document. */
  discoveryUrl: string
  /** What Google's API clients call `rootUrl` (`https://www.googleapis.com/` in production). */
  rootUrl: string
  control: GoogleControl
  /** Resolves once every push notification queued so far was delivered or given up. */
  notificationsSettled (): Promise<void>
  close (): Promise<void>
}

const SWEEP_INTERVAL_MS = 60 * 1000

// Values of these query parameters are secrets (or single-use credentials) and never reach a log line.
const SECRET_PARAMETERS = ['token', 'access_token', 'oauth_token', 'refresh_token', 'code', 'code_verifier', 'client_secret', 'id_token']

/** A request URL with secret query values replaced, for logging. */
export function scrubUrl (url: string): string {
  const question = url.indexOf('?')
  if (question < 0) return url
  const params = new URLSearchParams(url.slice(question + 1))
  for (const name of SECRET_PARAMETERS) if (params.has(name)) params.set(name, '[redacted]')
  return `${url.slice(0, question)}?${params.toString()}`
}

/** Redacts what must never reach a log line if request headers are ever logged. */
export const LOG_REDACT = ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]', 'req.headers["x-goog-channel-token"]']

function loggerOptions (logger: FastifyServerOptions['logger']): FastifyServerOptions['logger'] {
  if (logger === undefined || logger === false) return false
  const serializers = {
    req: (request: { method: string, url: string }) => ({ method: request.method, url: scrubUrl(request.url) })
  }
  if (logger === true) return { level: 'info', serializers, redact: LOG_REDACT }
  return { ...logger, serializers: { ...serializers, ...logger.serializers }, redact: logger.redact ?? LOG_REDACT }
}

function positive (value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`)
  return value
}

export async function startGoogle (options: GoogleOptions = {}): Promise<GoogleStandIn> {
  refuseProduction('dev/google')
  const now = options.clock ?? Date.now
  const lifetimes = {
    accessTokenSec: positive(options.accessTokenLifetimeSec, 'accessTokenLifetimeSec', 3599),
    idTokenSec: positive(options.idTokenLifetimeSec, 'idTokenLifetimeSec', 3600),
    codeSec: positive(options.codeLifetimeSec, 'codeLifetimeSec', 600)
  }
  const retries = options.notificationRetries ?? 3
  if (!Number.isInteger(retries) || retries < 0) throw new Error('notificationRetries must be a non-negative integer')

  const app = Fastify({ logger: loggerOptions(options.logger) })
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
  try {
    for (const client of options.clients ?? []) state.registerClient(client)
    for (const account of options.accounts ?? []) state.createAccount(account)
    await app.register(googleApp, { state })
    const sweep = setInterval(() => state.sweep(), SWEEP_INTERVAL_MS)
    sweep.unref()
    app.addHook('onClose', async () => {
      clearInterval(sweep)
      await state.channels.close()
    })
  } catch (err) {
    await app.close()
    throw err
  }
  const url = await listenOnLoopback(app, options.port, 'google stand-in')
  // Set before the event loop turns, so no request is answered without it.
  state.origin = url
  return {
    url,
    discoveryUrl: `${url}/.well-known/openid-configuration`,
    rootUrl: `${url}/`,
    control: state,
    notificationsSettled: async () => await state.channels.settled(),
    close: async () => { await app.close() }
  }
}
