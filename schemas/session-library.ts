import { Type, type TSchema } from '@sinclair/typebox'
import { FIELD_LIMITS } from './limits.js'
import { ProviderSignInSummarySchema } from './provider-auth.js'
import { SECURITY, SessionRefusedResponse, anyRouteResponses, bodyResponses, errorResponse, rateLimitedResponse } from './responses.js'

// The session library's routes under /api/auth (plugins/external/session.ts, configured in
// services/session-library/) are served by its middleware, not by Fastify routes, so the OpenAPI
// document describes them from these schemas: the requests and answers as this service configures
// the library (lib/auth-limits.ts lists the routes it lets through; every other spelling is a 404).
// Its answers are 200 with a `status`; only a malformed request (400 `{message}`), a missing
// session (401) and the service's own limits use other statuses.

/** The session library's answer to form fields it refuses. */
export const FieldErrorResponse = Type.Object({
  status: Type.Literal('FIELD_ERROR'),
  formFields: Type.Array(Type.Object({ id: Type.String(), error: Type.String() }))
}, { description: 'A form field was refused; `error` says why' })

/** A request the library cannot read (a missing or mistyped parameter). */
const LibraryBadRequestResponse = Type.Object({
  message: Type.String()
}, { description: 'The library could not read the request (`Missing input param: formFields`, ...)' })

const formField = (id: string, maxLength: number, description: string) => Type.Object({
  id: Type.Literal(id),
  value: Type.String({ maxLength, description })
}, { additionalProperties: false })

const EmailField = formField('email', FIELD_LIMITS.email, 'Compared after trimming and lower-casing')
const PasswordField = formField('password', FIELD_LIMITS.password, 'At least 8 characters, including a number')
const NameField = formField('name', FIELD_LIMITS.name, 'Not blank')

/** A form of the given fields, in any order. */
function form (fields: TSchema[], description: string): TSchema {
  return Type.Object({
    formFields: Type.Array(Type.Union(fields), { minItems: fields.length, maxItems: fields.length })
  }, { description })
}

const LibraryUser = Type.Object({
  id: Type.String({ description: 'The canonical user id (24 hex)' }),
  emails: Type.Array(Type.String()),
  timeJoined: Type.Integer({ description: 'Milliseconds since the epoch' }),
  loginMethods: Type.Array(Type.Object({ recipeId: Type.String(), email: Type.Optional(Type.String()), verified: Type.Boolean() }, { additionalProperties: true }))
}, { additionalProperties: true, description: 'The session library\'s user' })

const status = <S extends string>(value: S) => Type.Object({ status: Type.Literal(value) }, { additionalProperties: false })

function answers (...shapes: TSchema[]): TSchema {
  return shapes.length === 1 ? shapes[0]! : Type.Union(shapes)
}

const SignedIn = Type.Object({ status: Type.Literal('OK'), user: LibraryUser }, {
  description: 'Signed in: the tokens are in the sx-access-token, sx-refresh-token and front-token headers (header mode) or in cookies'
})
const NotAllowed = (status: string) => Type.Object({ status: Type.Literal(status), reason: Type.String() })
const Ok = status('OK')

const fieldErrors = { 400: Type.Union([FieldErrorResponse, LibraryBadRequestResponse], { description: 'A field longer than any valid one, or a request the library cannot read' }) }
const sessionRefusals = { 401: SessionRefusedResponse, ...anyRouteResponses }

export interface LibraryOperation {
  method: 'get' | 'post'
  path: string
  description: string
  security: Array<Record<string, string[]>>
  headers?: TSchema
  querystring?: TSchema
  body?: TSchema
  responses: Record<number, TSchema>
}

/** Native clients ask for tokens in headers; browsers send `rid` (anti-CSRF) on state-changing calls. */
const ClientHeaders = Type.Object({
  'sx-auth-mode': Type.Optional(Type.String({ description: 'Native clients: `header` (tokens in headers); `cookie` or anything else: cookies' })),
  rid: Type.Optional(Type.String({ description: 'Browsers: required on state-changing calls (anti-CSRF); the recipe, e.g. `emailpassword`' }))
})

export const LIBRARY_OPERATIONS: readonly LibraryOperation[] = [
  {
    method: 'post',
    path: '/api/auth/signup',
    description: 'Password sign-up; creates the user and a session',
    security: SECURITY.none,
    headers: ClientHeaders,
    body: form([NameField, EmailField, PasswordField], 'Fields `name`, `email`, `password`'),
    responses: {
      200: answers(SignedIn, FieldErrorResponse, NotAllowed('SIGN_UP_NOT_ALLOWED')),
      ...bodyResponses,
      ...fieldErrors,
      ...rateLimitedResponse,
      ...anyRouteResponses
    }
  },
  {
    method: 'post',
    path: '/api/auth/signin',
    description: 'Password sign-in; after repeated failures the account answers 429 to that address',
    security: SECURITY.none,
    headers: ClientHeaders,
    body: form([EmailField, PasswordField], 'Fields `email`, `password`'),
    responses: {
      200: answers(SignedIn, FieldErrorResponse, status('WRONG_CREDENTIALS_ERROR'), NotAllowed('SIGN_IN_NOT_ALLOWED')),
      ...bodyResponses,
      ...fieldErrors,
      ...rateLimitedResponse,
      ...anyRouteResponses
    }
  },
  {
    method: 'post',
    path: '/api/auth/signout',
    description: 'Revokes the session, closes its event streams and asks Sync to stop the user\'s watches',
    security: SECURITY.session,
    headers: ClientHeaders,
    responses: { 200: Ok, ...bodyResponses, ...sessionRefusals }
  },
  {
    method: 'post',
    path: '/api/auth/session/refresh',
    description: 'The library\'s refresh route (the same as POST /api/auth/refresh). A replayed refresh token revokes the session.',
    security: SECURITY.refresh,
    headers: ClientHeaders,
    responses: { 200: Type.Object({}, { description: 'New tokens in headers or cookies' }), ...bodyResponses, ...fieldErrors, ...rateLimitedResponse, ...sessionRefusals }
  },
  {
    method: 'post',
    path: '/api/auth/user/password/reset/token',
    description: 'Forgot password: mails a reset link when the account exists; the answer is the same either way',
    security: SECURITY.none,
    body: form([EmailField], 'Field `email`'),
    responses: { 200: answers(Ok, FieldErrorResponse), ...bodyResponses, ...fieldErrors, ...rateLimitedResponse, ...anyRouteResponses }
  },
  {
    method: 'post',
    path: '/api/auth/user/password/reset',
    description: 'Sets a new password with the token of the reset link; ends every session of the account',
    security: SECURITY.none,
    body: Type.Object({
      method: Type.Optional(Type.Literal('token')),
      token: Type.String({ description: 'The `token` of the reset link' }),
      formFields: Type.Array(PasswordField, { minItems: 1, maxItems: 1 })
    }),
    responses: {
      200: answers(Type.Object({ status: Type.Literal('OK') }, { additionalProperties: true }), FieldErrorResponse, status('RESET_PASSWORD_INVALID_TOKEN_ERROR')),
      ...bodyResponses,
      ...fieldErrors,
      ...rateLimitedResponse,
      ...anyRouteResponses
    }
  },
  {
    method: 'post',
    path: '/api/auth/user/email/verify/token',
    description: 'Mails an email-verification link to the signed-in user',
    security: SECURITY.session,
    responses: { 200: answers(Ok, status('EMAIL_ALREADY_VERIFIED_ERROR')), ...bodyResponses, ...sessionRefusals }
  },
  {
    method: 'get',
    path: '/api/auth/user/email/verify',
    description: 'Whether the signed-in user\'s email is verified',
    security: SECURITY.session,
    responses: { 200: Type.Object({ status: Type.Literal('OK'), isVerified: Type.Boolean() }), ...sessionRefusals }
  },
  {
    method: 'post',
    path: '/api/auth/user/email/verify',
    description: 'Verifies an email with the token of the verification link',
    security: SECURITY.none,
    body: Type.Object({ method: Type.Literal('token'), token: Type.String() }),
    responses: {
      200: answers(Type.Object({ status: Type.Literal('OK') }, { additionalProperties: true }), status('EMAIL_VERIFICATION_INVALID_TOKEN_ERROR')),
      ...bodyResponses,
      ...fieldErrors,
      ...rateLimitedResponse,
      ...anyRouteResponses
    }
  },
  {
    method: 'get',
    path: '/api/auth/authorisationurl',
    description: 'Provider sign-in, step 1: the provider\'s authorization URL. Only when a sign-in provider is configured (else 404).',
    security: SECURITY.none,
    querystring: Type.Object({
      thirdPartyId: Type.String({ description: '`google`, `microsoft` or `apple`' }),
      redirectURIOnProviderDashboard: Type.String({ description: 'Must be `{web.url}/auth/extprovider/callback`' })
    }),
    responses: {
      200: Type.Object({ status: Type.Literal('OK'), urlWithQueryParams: Type.String(), pkceCodeVerifier: Type.Optional(Type.String()) }),
      400: Type.Union([errorResponse('REDIRECT_URI_NOT_ALLOWED'), LibraryBadRequestResponse], { description: 'Another redirect URI, or an unknown provider' }),
      404: errorResponse('No sign-in provider is configured'),
      ...anyRouteResponses
    }
  },
  {
    method: 'post',
    path: '/api/auth/signinup',
    description: 'Provider sign-in, step 2: the code of the provider\'s redirect. Only when a sign-in provider is configured (else 404).',
    security: SECURITY.none,
    headers: ClientHeaders,
    body: Type.Object({
      thirdPartyId: Type.String(),
      redirectURIInfo: Type.Object({
        redirectURIOnProviderDashboard: Type.String(),
        redirectURIQueryParams: Type.Record(Type.String(), Type.Unknown()),
        pkceCodeVerifier: Type.Optional(Type.String())
      })
    }),
    responses: {
      200: answers(
        Type.Object({ status: Type.Literal('OK'), user: LibraryUser, createdNewRecipeUser: Type.Boolean(), summary: ProviderSignInSummarySchema }, { additionalProperties: true }),
        status('NO_EMAIL_GIVEN_BY_PROVIDER'),
        NotAllowed('SIGN_IN_UP_NOT_ALLOWED')
      ),
      ...bodyResponses,
      400: Type.Union([errorResponse('AUTHORIZATION_CODE_REQUIRED, REDIRECT_URI_NOT_ALLOWED, AUTHORIZATION_CODE_REJECTED'), LibraryBadRequestResponse, FieldErrorResponse], {
        description: 'The request lacks the code, names another redirect URI, or the provider refused the code'
      }),
      404: errorResponse('No sign-in provider is configured'),
      ...rateLimitedResponse,
      ...anyRouteResponses
    }
  }
]
