import { Type, type TSchema } from '@sinclair/typebox'
import { ErrorResponse } from './errors.js'

// What every route of a kind can answer besides its own results, declared once so that the OpenAPI
// document names each status a client can meet (app.ts and plugins/external answer them for every
// route: the session check, load shedding, the body parser and its limits).

/** One way to meet a route's security: the schemes of plugins/external/openapi.ts, all of them together. */
export type SecurityRequirement = Record<string, string[]>

/** Security requirements, by the schemes of plugins/external/openapi.ts. */
export const SECURITY: Record<'session' | 'refresh' | 'service' | 'none', SecurityRequirement[]> = {
  /** A verified session: the bearer access token of a native client, or the browser's cookie. */
  session: [{ bearer: [] }, { cookie: [] }],
  /** The refresh token, as a bearer token (native clients) or the browser's refresh cookie. */
  refresh: [{ refreshBearer: [] }, { refreshCookie: [] }],
  /** backend.serviceToken as a bearer token: the Sync service only. */
  service: [{ serviceToken: [] }],
  /** No credential. */
  none: []
}

/** The same error body with what a client learns from this status. */
export function errorResponse (description: string): TSchema {
  return Type.Object(ErrorResponse.properties, { description })
}

/** The session library's own refusal (`unauthorised`, `try refresh token`, `token theft detected`). */
export const SessionRefusedResponse = Type.Object({
  message: Type.String({ description: '`try refresh token`: refresh, then repeat; anything else: sign in again' })
}, { additionalProperties: true, description: 'No valid session: an expired access token (refresh and repeat), or a session that ended (sign in again)' })

const unavailable = errorResponse('Briefly unavailable (OVERLOADED, SESSION_SERVICE_UNAVAILABLE, DATABASE_UNAVAILABLE, DEADLINE_EXCEEDED, ' +
  'MAINTENANCE, SYNC_UNAVAILABLE, ...): try again after Retry-After')

/** What any route but the health probe can answer: shed under load (503 OVERLOADED). */
export const anyRouteResponses = { 503: unavailable }

/** A route behind the session check: 401 in the session library's shape, 503 while the session core is away. */
export const sessionResponses = { 401: SessionRefusedResponse, 503: unavailable }

/** A route behind backend.serviceToken. */
export const serviceResponses = { 401: errorResponse('SERVICE_TOKEN_REQUIRED: no valid service token'), 503: unavailable }

/** A route whose method carries a body: unreadable JSON, too large, or not JSON in UTF-8. */
export const bodyResponses = {
  400: errorResponse('The request does not match its schema, or its JSON cannot be read'),
  413: errorResponse('The body is larger than the route takes'),
  415: errorResponse('Not a JSON body in UTF-8 (UNSUPPORTED_MEDIA_TYPE, UNSUPPORTED_CHARSET)')
}

/** A route with path or query parameters, or a body schema, that a request can fail. */
export const invalidInputResponse = { 400: bodyResponses[400] }

/** A credential route's flood limits (lib/auth-limits.ts). */
export const rateLimitedResponse = { 429: errorResponse('RATE_LIMITED: too many attempts; try again after Retry-After') }

/** A written change: a true empty 204, no body and no content type. */
export const NoContentResponse = Type.Null({ description: 'Done: no body and no content type' })
