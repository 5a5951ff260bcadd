// Starting a provider stand-in: options checked the same way, logs that never carry a credential,
// and one Fastify server on the loopback address whose close also stops background delivery.
import Fastify from 'fastify'
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import { listenOnLoopback } from './index.js'

const SWEEP_INTERVAL_MS = 60 * 1000

/** A request URL with the values of `secretParameters` replaced, for logging. */
export function scrubUrl (url: string, secretParameters: readonly string[]): string {
  const question = url.indexOf('?')
  if (question < 0) return url
  const params = new URLSearchParams(url.slice(question + 1))
  for (const name of secretParameters) if (params.has(name)) params.set(name, '[redacted]')
  return `${url.slice(0, question)}?${params.toString()}`
}

/** Headers every stand-in redacts if request headers are ever logged; a provider may add its own. */
export const COMMON_LOG_REDACT = ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]']

export function loggerOptions (
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

export function createServer (logger: FastifyServerOptions['logger'], secretParameters: readonly string[], redact: string[]): FastifyInstance {
  return Fastify({ logger: loggerOptions(logger, secretParameters, redact) })
}

export interface ServeOptions {
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
export async function serve (app: FastifyInstance, options: ServeOptions): Promise<string> {
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
