// The error families Microsoft answers with, kept apart because clients parse them differently:
// Graph's `{ error: { code, message, innerError } }`, the identity platform's token endpoint
// `{ error, error_description: "AADSTS<n>: ...", error_codes: [n], timestamp, trace_id, correlation_id }`,
// the error page the authorization endpoint shows instead of redirecting, and the control surface.
import { newGuid } from './secrets.js'

/** A Graph refusal. */
export class GraphError extends Error {
  constructor (readonly statusCode: number, readonly code: string, message: string) {
    super(message)
  }

  body (requestId: string, clientRequestId: string, now: Date): Record<string, unknown> {
    return {
      error: {
        code: this.code,
        message: this.message,
        innerError: { date: now.toISOString().slice(0, 19), 'request-id': requestId, 'client-request-id': clientRequestId }
      }
    }
  }
}

// Graph's own codes and messages for the refusals the stand-in gives, by the situation.
export const graphErrors = {
  noToken: () => new GraphError(401, 'InvalidAuthenticationToken', 'Access token is empty.'),
  badToken: () => new GraphError(401, 'InvalidAuthenticationToken', 'Access token validation failure.'),
  expiredToken: () => new GraphError(401, 'InvalidAuthenticationToken', 'Lifetime validation failed, the token is expired.'),
  accessDenied: () => new GraphError(403, 'ErrorAccessDenied', 'Access is denied. Check credentials and try again.'),
  notFound: () => new GraphError(404, 'ErrorItemNotFound', 'The specified object was not found in the store.'),
  malformedId: () => new GraphError(400, 'ErrorInvalidIdMalformed', 'Id is malformed.'),
  invalidRequest: (message: string) => new GraphError(400, 'ErrorInvalidRequest', message),
  validation: (message: string) => new GraphError(400, 'ErrorPropertyValidationFailure', message),
  invalidParameter: (message: string) => new GraphError(400, 'ErrorInvalidParameter', message),
  badBody: (message = 'Empty Payload. JSON content expected.') => new GraphError(400, 'BadRequest', message),
  timeZone: (zone: string) =>
    new GraphError(400, 'TimeZoneNotSupportedException', `A valid TimeZone value must be specified. The following TimeZone value is not supported: '${zone}'.`),
  conflict: () =>
    new GraphError(412, 'ErrorIrresolvableConflict',
      'The send or update operation could not be performed because the change key passed in the request does not match the current change key for the item.'),
  syncStateNotFound: () =>
    new GraphError(410, 'SyncStateNotFound', 'The sync state generation is not found. The delta token is expired and data must be synchronized again.'),
  notSupported: (message: string) => new GraphError(400, 'ErrorInvalidUrlQuery', message),
  subscriptionRequest: (message: string) => new GraphError(400, 'InvalidRequest', message),
  subscriptionNotFound: (id: string) => new GraphError(404, 'ResourceNotFound', `The object '${id}' was not found.`),
  subscriptionForbidden: () =>
    new GraphError(403, 'ExtensionError', 'Operation: Create; Exception: [Status Code: Forbidden; Reason: Access is denied. Check credentials and try again.]'),
  unknownSegment: (segment: string) => new GraphError(400, 'BadRequest', `Resource not found for the segment '${segment}'.`),
  tooManyRequests: () => new GraphError(429, 'TooManyRequests', 'Please retry again later.'),
  serviceUnavailable: () => new GraphError(503, 'serviceNotAvailable', 'The service is temporarily unavailable. Try the request again after a delay.'),
  internal: () => new GraphError(500, 'InternalServerError', 'An internal server error occurred.')
}

/** A token endpoint refusal with its AADSTS code. */
export class TokenError extends Error {
  constructor (readonly statusCode: number, readonly error: string, readonly aadsts: number, description: string) {
    super(description)
  }

  body (now: Date, errorUriBase: string): Record<string, unknown> {
    const timestamp = now.toISOString().replace('T', ' ').replace(/\.\d{3}Z$/, 'Z')
    const traceId = newGuid()
    const correlationId = newGuid()
    return {
      error: this.error,
      error_description: `AADSTS${this.aadsts}: ${this.message}\r\nTrace ID: ${traceId}\r\nCorrelation ID: ${correlationId}\r\nTimestamp: ${timestamp}`,
      error_codes: [this.aadsts],
      timestamp,
      trace_id: traceId,
      correlation_id: correlationId,
      error_uri: `${errorUriBase}/error?code=${this.aadsts}`
    }
  }
}

/**
 * A refusal at the authorization endpoint that the identity platform shows to the person instead
 * of redirecting (unknown application, unregistered redirect URI): the application never sees it.
 */
export class AuthorizePageError extends Error {
  constructor (readonly statusCode: number, readonly aadsts: number, description: string) {
    super(description)
  }
}

// The control surface refuses the same way on every stand-in.
export { ControlError } from '../stand-in/control.js'
