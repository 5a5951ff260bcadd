// Starting a provider stand-in: options checked the same way, logs that never carry a credential,
// and one Fastify server on the loopback address whose close also stops background delivery.
import Fastify from 'fastify'
import type { FastifyInstance, FastifyPluginAsync, FastifyServerOptions } from 'fastify'
import { listenOnLoopback } from './index.js'

const SWEEP_INTERVAL_MS = 60 * 1000

/** A request URL with the values of `secretParameters` replaced, for logging. */
function scrubUrl (url: string, secretParameters: readonly string[]): string {
  const question = url.indexOf('?')
  if (question < 0) return url
  const params = new URLSearchParams(url.slice(question + 1))
  for (const name of secretParameters) if (params.has(name)) params.set(name, '[redacted]')
  return `${url.slice(0, question)}?${params.toString()}`
}

/** Headers every stand-in redacts if request headers are ever logged; a provider may add its own. */
export const COMMON_LOG_REDACT = ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]']

function loggerOptions (
  logger: FastifyServerOptions['logger'],
  secretParameters: readonly string[],
  redact: string[]
): FastifyServerOptions['logger'] {
  if (logger === undefined || logger === false) return false
  const serializers = {
    req: (request: { method: string, url: string }) => ({ method: request.method, url: scrubUrl(request.url, secretParameters) })
  }
  if (logger === true) return { level: 'info', serializers, redact }
  return { ...logger, serializers: { ...serializers, ...logger.serializers }, redact: logger.redact ?? redact }
}

export function positive (value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`)
  return value
}

export function notificationRetries (value: number | undefined): number {
  const retries = value ?? 3
  if (!Number.isInteger(retries) || retries < 0) throw new Error('notificationRetries must be a non-negative integer')
  return retries
}

/**
 * The options every stand-in takes. A provider's own interface repeats a field where its default
 * or its meaning is the provider's (its documented lifetimes and delivery rules).
 */
export interface StandInOptions<Client, AccountSetup> {
  /** 0 or absent: any free port. */
  port?: number
  clients?: Client[]
  /** Accounts to create at start, each with its default calendar. */
  accounts?: AccountSetup[]
  /** Milliseconds since the epoch; tests pass their own to move time. */
  clock?: () => number
  /** Default 3599. */
  accessTokenLifetimeSec?: number
  /** Default 3600. */
  idTokenLifetimeSec?: number
  /** Default 600. */
  codeLifetimeSec?: number
  /** Default 3. */
  notificationRetries?: number
  /** First retry delay, doubled each time. Default 1000. */
  notificationRetryDelayMs?: number
  notificationTimeoutMs?: number
  logger?: FastifyServerOptions['logger']
}

/** Access token, ID token and code lifetimes, checked, with the defaults both providers document alike. */
export function tokenLifetimes (options: StandInOptions<unknown, unknown>): { accessTokenSec: number, idTokenSec: number, codeSec: number } {
  return {
    accessTokenSec: positive(options.accessTokenLifetimeSec, 'accessTokenLifetimeSec', 3599),
    idTokenSec: positive(options.idTokenLifetimeSec, 'idTokenLifetimeSec', 3600),
    codeSec: positive(options.codeLifetimeSec, 'codeLifetimeSec', 600)
  }
}

export function createServer (logger: FastifyServerOptions['logger'], secretParameters: readonly string[], redact: string[]): FastifyInstance {
  return Fastify({ logger: loggerOptions(logger, secretParameters, redact) })
}

interface ServeOptions {
  /** Registers the routes and the start-up clients and accounts; a throw closes the server. */
  setUp: () => Promise<void>
  /** Drops what expired (codes, tokens, subscriptions); runs every minute. */
  sweep: () => void
  /** Stops notification delivery when the server closes. */
  closeDelivery: () => Promise<void>
  port: number | undefined
  /** For the error when no port was bound, e.g. `google stand-in`. */
  what: string
}

/** Sets the app up and listens on the loopback address; answers the base URL. */
async function serve (app: FastifyInstance, options: ServeOptions): Promise<string> {
  try {
    await options.setUp()
    const sweep = setInterval(options.sweep, SWEEP_INTERVAL_MS)
    sweep.unref()
    app.addHook('onClose', async () => {
      clearInterval(sweep)
      await options.closeDelivery()
    })
  } catch (err) {
    await app.close()
    throw err
  }
  return await listenOnLoopback(app, options.port, options.what)
}

/** What `startStandIn` needs of a provider's state. */
export interface ServedState<Client, AccountSetup> {
  origin: string
  registerClient (client: Client): unknown
  createAccount (setup: AccountSetup): unknown
  sweep (): void
}

export interface StandInStart<State, Client, AccountSetup> {
  state: State
  /** The provider's HTTP surface, registered with the state. */
  plugin: FastifyPluginAsync<{ state: State }>
  /** The provider's notification delivery (push channels, Graph subscriptions). */
  delivery: { close: () => Promise<void>, settled: () => Promise<void> }
  clients: Client[] | undefined
  accounts: AccountSetup[] | undefined
  port: number | undefined
  /** For the error when no port was bound, e.g. `google stand-in`. */
  what: string
}

/** A running stand-in, as its starter answers it; each provider adds its own URLs and control surface. */
export interface StartedStandIn {
  /** The one origin of every endpoint, e.g. `http://127.0.0.1:PORT`. */
  url: string
  /** Resolves once every notification queued so far was delivered or given up. */
  notificationsSettled (): Promise<void>
  close (): Promise<void>
}

/** Registers the start-up clients and accounts and the provider's routes, and serves them; answers the base URL. */
export async function startStandIn<State extends ServedState<Client, AccountSetup>, Client, AccountSetup> (
  app: FastifyInstance,
  start: StandInStart<State, Client, AccountSetup>
): Promise<StartedStandIn> {
  const { state } = start
  const url = await serve(app, {
    setUp: async () => {
      for (const client of start.clients ?? []) state.registerClient(client)
      for (const account of start.accounts ?? []) state.createAccount(account)
      await app.register(start.plugin, { state })
    },
    sweep: () => state.sweep(),
    closeDelivery: async () => await start.delivery.close(),
    port: start.port,
    what: start.what
  })
  // Set before the event loop turns, so no request is answered without it.
  state.origin = url
  return {
    url,
    notificationsSettled: async () => await start.delivery.settled(),
    close: async () => { await app.close() }
  }
}
