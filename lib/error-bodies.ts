import { STATUS_CODES } from 'node:http'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import type { ErrorResponse } from '../schemas/errors.js'

// The backend's one error body shape (schemas/errors.ts), built in one place.

export function errorBody (statusCode: number, message: string, code?: string, details: ErrorDetails = {}): ErrorResponse {
  return { statusCode, ...(code !== undefined ? { code } : {}), error: STATUS_CODES[statusCode] ?? 'Error', message, ...details }
}

export interface ErrorDetails {
  connectionId?: string
}

// A refusal the specification names (EVENT_INVALID, CONNECTION_REVOKED, MAINTENANCE, ...): its
// message is written for clients, so it is sent as it is, even with a 5xx status.
export class TypedHttpError extends Error {
  override name = 'TypedHttpError'
  constructor (
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly details: ErrorDetails = {},
    /** Sent as Retry-After: the refusal is temporary and the client may try again then. */
    readonly retryAfterSeconds?: number
  ) {
    super(message)
  }
}

/** What a client is told to wait before retrying while the database is unavailable. */
export const DATABASE_RETRY_AFTER_SECONDS = 5

/** The database could not be reached or did not answer in time: 503 with Retry-After, never a 401 or a 500. */
export function sendDatabaseUnavailable (request: FastifyRequest, reply: FastifyReply, error: unknown): FastifyReply {
  request.log.error({ err: error }, 'database unavailable')
  return reply.code(503).header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS))
    .send(errorBody(503, 'The service is briefly unavailable; try again shortly', 'DATABASE_UNAVAILABLE'))
}

export function notFoundBody (method: string, url: string): ErrorResponse {
  return errorBody(404, `Route ${method} ${url.split('?')[0]} not found`)
}

// A server error never tells the client about internals.
export function serverErrorBody (statusCode: number): ErrorResponse {
  return errorBody(statusCode, 'Something went wrong on our side; try again later')
}

/** The bodies a service answers with for an error that none of its own typed errors claimed. */
export interface UntypedErrorBodies<Body> {
  /** The request failed its route's schema (400). */
  invalid: (message: string) => Body
  /** A 4xx that Fastify or a plugin raised, such as a body over the limit. */
  refused: (statusCode: number, message: string, code: string) => Body
  /** Any 5xx, and anything thrown without a status: the caller learns nothing of the cause. */
  failed: (statusCode: number) => Body
}

// The backend and the Sync service answer untyped errors by the same rule (a schema failure is
// a 400, a status below 400 counts as 500, a 5xx is logged and its message hidden) in bodies of
// their own families; the rule lives here so the two cannot drift.
export function sendUntypedError<Body> (request: FastifyRequest, reply: FastifyReply, error: FastifyError, bodies: UntypedErrorBodies<Body>): FastifyReply {
  if (error.validation) return reply.code(400).send(bodies.invalid(error.message))
  const statusCode = error.statusCode !== undefined && error.statusCode >= 400 ? error.statusCode : 500
  if (statusCode >= 500) {
    request.log.error({ err: error }, 'request failed')
    return reply.code(statusCode).send(bodies.failed(statusCode))
  }
  return reply.code(statusCode).send(bodies.refused(statusCode, error.message, error.code))
}
