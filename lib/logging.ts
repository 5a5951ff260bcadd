import type { IncomingMessage } from 'node:http'
import type { LoggerOptions } from 'pino'

// Everything that can carry a credential, wherever it appears in a log object.
const redactedPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["sx-access-token"]',
  'req.headers["sx-refresh-token"]',
  'req.headers["st-access-token"]',
  'req.headers["st-refresh-token"]',
  'req.headers["front-token"]',
  'req.headers["anti-csrf"]',
  'req.headers["x-sync-signature"]',
  'req.headers["stripe-signature"]',
  'req.headers["x-calendar-connect-binder"]',
  'res.headers["set-cookie"]',
  'res.headers["sx-access-token"]',
  'res.headers["sx-refresh-token"]',
  'res.headers["st-access-token"]',
  'res.headers["st-refresh-token"]',
  'res.headers["front-token"]',
  'headers.authorization',
  'headers.cookie',
  'password',
  '*.password',
  'newPassword',
  '*.newPassword',
  'token',
  '*.token',
  'secret',
  '*.secret',
  '*.clientSecret',
  '*.apiKey',
  '*.refreshToken',
  '*.accessToken',
  '*.internalAuthToken',
  '*.credentialEncryptionKey'
]

// Query parameters that carry a credential or a one-time secret: an access token sent in the URL
// (clients that cannot set headers, such as EventSource), OAuth's authorization code and state on
// provider callbacks, ID tokens of a form post turned into a redirect, reset and unsubscribe tokens.
// Names are compared without regard to case.
const SECRET_QUERY_PARAMETERS = new Set([
  'access_token', 'accesstoken', 'sx-access-token', 'st-access-token', 'refresh_token', 'id_token', 'token',
  'code', 'state', 'client_secret', 'code_verifier', 'session_state', 'key'
])

const CENSOR = '[redacted]'

/** The URL as it may be written to a log: the value of every secret query parameter replaced. */
export function redactUrl (url: string): string {
  const queryAt = url.indexOf('?')
  if (queryAt < 0) return url
  const pairs = url.slice(queryAt + 1).split('&').map((pair) => {
    const equalsAt = pair.indexOf('=')
    const rawName = equalsAt < 0 ? pair : pair.slice(0, equalsAt)
    return SECRET_QUERY_PARAMETERS.has(parameterName(rawName)) ? `${rawName}=${CENSOR}` : pair
  })
  return `${url.slice(0, queryAt)}?${pairs.join('&')}`
}

function parameterName (raw: string): string {
  try {
    return decodeURIComponent(raw.replaceAll('+', ' ')).toLowerCase()
  } catch {
    // A name that does not decode is compared as sent; it can name no parameter a route reads.
    return raw.toLowerCase()
  }
}

interface LoggedRequest extends Pick<IncomingMessage, 'method' | 'headers' | 'socket'> {
  url: string
  host?: string
  ip?: string
}

// Fastify's own request serializer, with the URL's secrets replaced: the request line is logged
// by both services on every request, so this is the one place a query string reaches the logs.
function requestSerializer (request: LoggedRequest) {
  return {
    method: request.method,
    url: redactUrl(request.url),
    version: request.headers['accept-version'],
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort
  }
}

const ERROR_FIELDS_KEPT = ['code', 'codeName', 'status', 'statusCode', 'reason', 'errorClass', 'deadlineMs'] as const

/**
 * An error as logged: what explains it, never what it carries. The default serializer writes every
 * property of the error, and a provider client's error holds the request it made (a token
 * exchange's body with the client secret and the authorization code) and the answer it got.
 */
export function errorSerializer (error: unknown, depth = 0): Record<string, unknown> {
  if (!(error instanceof Error)) return { type: typeof error, message: String(error) }
  const logged: Record<string, unknown> = { type: error.constructor.name, message: error.message, stack: error.stack }
  for (const field of ERROR_FIELDS_KEPT) {
    const value = (error as unknown as Record<string, unknown>)[field]
    if (typeof value === 'string' || typeof value === 'number') logged[field] = value
  }
  if (error.cause !== undefined && depth < 3) logged['cause'] = errorSerializer(error.cause, depth + 1)
  return logged
}

export function loggerOptions (level: string, pretty = process.stdout.isTTY === true): LoggerOptions {
  return {
    level,
    redact: { paths: redactedPaths, censor: CENSOR },
    serializers: { req: requestSerializer, err: (error: unknown) => errorSerializer(error) },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } } : {})
  }
}
