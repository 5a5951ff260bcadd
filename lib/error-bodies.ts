import { STATUS_CODES } from 'node:http'
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

export function notFoundBody (method: string, url: string): ErrorResponse {
  return errorBody(404, `Route ${method} ${url.split('?')[0]} not found`)
}

// A server error never tells the client about internals.
export function serverErrorBody (statusCode: number): ErrorResponse {
  return errorBody(statusCode, 'Something went wrong on our side; try again later')
}
