// The two error families Google answers with, kept apart because clients parse them differently:
// the Calendar API's JSON error envelope, and the OAuth 2.0 token/revoke endpoints' flat
// `{ error, error_description }` (RFC 6749 section 5.2).

interface ApiErrorItem {
  domain: string
  reason: string
  message: string
  locationType?: string
  location?: string
}

export interface ApiErrorBody {
  error: { code: number, message: string, errors: ApiErrorItem[] }
}

/** A Calendar API refusal, answered as `{ error: { code, message, errors: [{ domain, reason, message }] } }`. */
export class ApiError extends Error {
  constructor (
    readonly statusCode: number,
    readonly reason: string,
    message: string,
    readonly domain = 'global',
    readonly location?: { type: string, name: string },
    /** The envelope's message when Google words it differently from the item's. */
    readonly summary?: string
  ) {
    super(message)
  }

  body (): ApiErrorBody {
    const item: ApiErrorItem = { domain: this.domain, reason: this.reason, message: this.message }
    if (this.location !== undefined) {
      item.locationType = this.location.type
      item.location = this.location.name
    }
    return { error: { code: this.statusCode, message: this.summary ?? this.message, errors: [item] } }
  }
}

// The errors of the Calendar API's error guide, by the name the guide gives them.
export const apiErrors = {
  badRequest: (message: string, location?: string) =>
    new ApiError(400, 'badRequest', message, 'global', location === undefined ? undefined : { type: 'parameter', name: location }),
  invalid: (message: string, location?: string) =>
    new ApiError(400, 'invalid', message, 'global', location === undefined ? undefined : { type: 'parameter', name: location }),
  required: (message: string, location?: string) =>
    new ApiError(400, 'required', message, 'global', location === undefined ? undefined : { type: 'parameter', name: location }),
  timeRangeEmpty: (location: string) =>
    new ApiError(400, 'timeRangeEmpty', 'The specified time range is empty.', 'calendar', { type: 'parameter', name: location }),
  loginRequired: () =>
    new ApiError(401, 'required', 'Login Required.', 'global', { type: 'header', name: 'Authorization' },
      'Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.'),
  invalidCredentials: () =>
    new ApiError(401, 'authError', 'Invalid Credentials', 'global', { type: 'header', name: 'Authorization' }),
  insufficientPermissions: () =>
    new ApiError(403, 'insufficientPermissions', 'Insufficient Permission', 'global', undefined, 'Request had insufficient authentication scopes.'),
  // What Google answers an event write to a calendar the account can only read (accessRole
  // `reader` or `freeBusyReader`), in the `calendar` domain as its answers on the wire show.
  requiredAccessLevel: () =>
    new ApiError(403, 'requiredAccessLevel', 'You need to have writer access to this calendar.', 'calendar'),
  syncTokenWithRestrictions: () =>
    new ApiError(400, 'syncTokenWithRequestRestrictions', 'Sync token cannot be used with other request restrictions.', 'calendar'),
  notFound: () => new ApiError(404, 'notFound', 'Not Found'),
  duplicate: () => new ApiError(409, 'duplicate', 'The requested identifier already exists.'),
  deleted: () => new ApiError(410, 'deleted', 'Resource has been deleted'),
  fullSyncRequired: () =>
    new ApiError(410, 'fullSyncRequired', 'Sync token is no longer valid, a full sync is required.', 'calendar'),
  conditionNotMet: () =>
    new ApiError(412, 'conditionNotMet', 'Precondition Failed', 'global', { type: 'header', name: 'If-Match' }),
  parseError: () => new ApiError(400, 'parseError', 'Parse Error'),
  backendError: () => new ApiError(500, 'backendError', 'Backend Error')
}

/** An OAuth 2.0 endpoint refusal, answered as `{ error, error_description }`. */
export class OAuthError extends Error {
  constructor (readonly statusCode: number, readonly error: string, description: string) {
    super(description)
  }

  body (): { error: string, error_description: string } {
    return { error: this.error, error_description: this.message }
  }
}

/**
 * A refusal at the authorization endpoint that Google shows to the person instead of redirecting
 * (unknown client, unregistered redirect URI, malformed request): the application never sees it.
 */
export class AuthorizationPageError extends Error {
  constructor (readonly statusCode: number, readonly error: string, description: string) {
    super(description)
  }
}

// The control surface refuses the same way on every stand-in.
export { ControlError } from '../stand-in/control.js'
