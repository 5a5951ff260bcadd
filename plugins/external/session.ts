import { randomBytes } from 'node:crypto'
import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import supertokens from 'supertokens-node'
import { plugin as supertokensPlugin, errorHandler as supertokensErrorHandler } from 'supertokens-node/framework/fastify'
import Session from 'supertokens-node/recipe/session'
import { verifySession } from 'supertokens-node/recipe/session/framework/fastify'
import EmailPassword from 'supertokens-node/recipe/emailpassword'
import { SMTPService as EmailPasswordSMTPService } from 'supertokens-node/recipe/emailpassword/emaildelivery'
import EmailVerification from 'supertokens-node/recipe/emailverification'
import { SMTPService as EmailVerificationSMTPService } from 'supertokens-node/recipe/emailverification/emaildelivery'
import UserMetadata from 'supertokens-node/recipe/usermetadata'
import ThirdParty from 'supertokens-node/recipe/thirdparty'
import type { TypeProvider } from 'supertokens-node/recipe/thirdparty'
import { decodeJwt } from 'jose'
import { signInProviders, type SignInProvider } from '../../lib/identity-providers.js'
import { oidcNonceFor } from '../../lib/pkce.js'
import type { Config } from '../../schemas/config.js'
import { mintUserId, normalizeEmail } from '../../lib/identity.js'
import type { LibraryRequest } from '../../services/identity.js'
import { accountEmailDelivery, smtpSettings } from '../../lib/email-delivery.js'
import { errorBody, notFoundBody, TypedHttpError } from '../../lib/error-bodies.js'
import { withDeadline } from '../../lib/deadline.js'
import { isAllowedRedirectUri } from '../../lib/provider-auth.js'
import type { ProviderSignInSummary } from '../../schemas/provider-auth.js'
import {
  claimedExpiry, coreProbe, installSessionCoreDeadlines, isSessionCoreUnavailableError, SESSION_CORE_RETRY_AFTER_SECONDS, SESSION_VERIFY_DEADLINE_MS
} from '../../clients/session-core.js'

declare module 'fastify' {
  interface FastifyInstance {
    requireSession: (request: FastifyRequest, reply: FastifyReply) => Promise<void>
    requireLiveSession: (request: FastifyRequest, reply: FastifyReply) => Promise<void>
  }
  interface FastifyRequest {
    // The canonical 24-hex user id of the verified session.
    userId: string
  }
}

// The part of the session library's request wrapper this plugin reads.
interface BaseRequest {
  getHeaderValue: (key: string) => string | undefined
  original: unknown
}

export const AUTH_BASE_PATH = '/api/auth'

// Native clients ask for header mode with the specification's sx-auth-mode; SuperTokens' own
// frontend SDKs send st-auth-mode. Tokens answer under the same family of names.
function requestedAuthMode (req: BaseRequest): string | undefined {
  return (req.getHeaderValue('sx-auth-mode') ?? req.getHeaderValue('st-auth-mode'))?.toLowerCase()
}

function formValue (formFields: Array<{ id: string, value: unknown }>, id: string): string | undefined {
  const value = formFields.find((field) => field.id === id)?.value
  return typeof value === 'string' ? value : undefined
}

function appOf (req: BaseRequest): FastifyInstance {
  return (req.original as FastifyRequest).server
}

/** The logger of the app serving the library's current request; the first app's when there is none. */
function loggerFor (userContext: Parameters<typeof supertokens.getRequestFromUserContext>[0], fallback: FastifyInstance['log']): FastifyInstance['log'] {
  const request = supertokens.getRequestFromUserContext(userContext)
  return request === undefined ? fallback : appOf(request).log
}

function libraryRequest (input: { options: { req: LibraryRequest['req'], res: LibraryRequest['res'] }, tenantId: string, userContext: LibraryRequest['userContext'] }): LibraryRequest {
  return { req: input.options.req, res: input.options.res, tenantId: input.tenantId, userContext: input.userContext }
}

// The requests (by their user context) during which the library checked a password.
const passwordChecked = new WeakSet<object>()

// The summary of a provider sign-in, added to the library's answer as it is sent.
const signInSummaries = new WeakMap<FastifyRequest, ProviderSignInSummary>()

/**
 * An account nobody can sign in to, whose only use is to have a password checked: a sign-in for
 * an unknown email checks its password against this account, which costs the session core what a
 * wrong password for a real account costs.
 */
const signInDecoy = {
  email: 'sign-in-decoy@calendar.invalid',
  ready: undefined as Promise<void> | undefined,
  async check (tenantId: string, password: string, userContext: Record<string, unknown>): Promise<void> {
    this.ready ??= EmailPassword.signUp(tenantId, this.email, randomBytes(32).toString('base64url'))
      .then(() => {}, (error: unknown) => { this.ready = undefined; throw error })
    await this.ready
    await EmailPassword.verifyCredentials(tenantId, this.email, password, userContext)
  }
}

// The session library keeps one configuration per process; the per-app state it needs (the
// user store, the logger) is reached through the request, so several app instances in one
// process (tests, benchmarks) each use their own.
function initSessionLibrary (config: Config, log: FastifyInstance['log']) {
  installSessionCoreDeadlines(config.sessions.uri)
  const coreAnswers = coreProbe(config.sessions.uri)
  const apiUrl = new URL(config.backend.apiUrl)
  const webUrl = new URL(config.web.url)
  const nodeEnv = config.runtime.nodeEnv

  const providers = signInProviders(config)
  const smtp = smtpSettings(config)

  supertokens.init({
    framework: 'fastify',
    supertokens: { connectionURI: config.sessions.uri, apiKey: config.sessions.key },
    appInfo: {
      appName: 'Calendar',
      apiDomain: apiUrl.origin,
      apiBasePath: AUTH_BASE_PATH,
      websiteDomain: webUrl.origin,
      websiteBasePath: '/'
    },
    recipeList: [
      EmailPassword.init({
        // Sign-up's fields are name, email and password (specification, "Endpoints"): a name that
        // is missing or blank is refused as a field error, like a malformed email.
        signUpFeature: { formFields: [{ id: 'name', validate: async (value: unknown) => typeof value === 'string' && value.trim() !== '' ? undefined : 'Enter your name' }] },
        emailDelivery: {
          ...(smtp === undefined ? {} : { service: new EmailPasswordSMTPService({ smtpSettings: smtp }) }),
          override: (original) => ({
            ...original,
            sendEmail: async (input) => {
              const decision = accountEmailDelivery('passwordReset', input.passwordResetLink, config)
              if (decision.deliver) {
                await original.sendEmail({ ...input, passwordResetLink: decision.link })
                return
              }
              // Tests read the link from the log.
              loggerFor(input.userContext, log).info({ passwordResetLink: decision.link, nodeEnv }, 'password reset link (not delivered in test)')
            }
          })
        },
        override: {
          functions: (original) => ({
            ...original,
            // Password sign-up gets an external user id mapping to a new ObjectId, so sessions
            // carry the canonical id from their first token.
            signUp: async (input) => {
              const email = normalizeEmail(input.email)
              const result = await original.signUp({ ...input, email })
              const request = supertokens.getRequestFromUserContext(input.userContext)
              // Without a request this is the service's own sign-up (the sign-in decoy): no user record.
              if (result.status !== 'OK' || request === undefined) return result
              const { identity } = appOf(request)
              // A user record that already owns this email keeps its id; otherwise a new one.
              return await identity.withCanonicalMapping(result, async () => await identity.idForNewPasswordLogin(email))
            },
            signIn: async (input) => {
              passwordChecked.add(input.userContext)
              return await original.signIn({ ...input, email: normalizeEmail(input.email) })
            },
            verifyCredentials: async (input) => {
              passwordChecked.add(input.userContext)
              return await original.verifyCredentials({ ...input, email: normalizeEmail(input.email) })
            }
          }),
          apis: (original) => ({
            ...original,
            signUpPOST: original.signUpPOST && (async (input) => {
              const result = await original.signUpPOST!(input)
              if (result.status !== 'OK') return result
              // The address an account was made at is one it is known at (a lock does not shut it out).
              const request = input.options.req.original as FastifyRequest
              request.server.signInGuard.succeeded(normalizeEmail(formValue(input.formFields, 'email') ?? ''), request.ip)
              const session = await appOf(input.options.req).identity.adopt(libraryRequest(input), result.session, {
                email: formValue(input.formFields, 'email') ?? '',
                name: formValue(input.formFields, 'name')
              })
              return { ...result, session }
            }),
            // The session library's email-exists check would tell anyone which emails have accounts.
            emailExistsGET: undefined,
            signInPOST: original.signInPOST && (async (input) => {
              const request = input.options.req.original as FastifyRequest
              const account = normalizeEmail(formValue(input.formFields, 'email') ?? '')
              const wait = request.server.signInGuard.refusal(account, request.ip)
              if (wait !== undefined) {
                request.log.warn('sign-in refused: too many failed attempts')
                throw new TypedHttpError(429, 'RATE_LIMITED', `Too many attempts; try again in ${wait} seconds`, {}, wait)
              }
              const result = await original.signInPOST!(input)
              if (result.status === 'OK') request.server.signInGuard.succeeded(account, request.ip)
              else if (result.status === 'WRONG_CREDENTIALS_ERROR') request.server.signInGuard.failed(account, request.ip)
              if (result.status === 'WRONG_CREDENTIALS_ERROR' && !passwordChecked.has(input.userContext)) {
                // The library answers at once for an email without an account, but only after a
                // password check for one with an account: check the password against the decoy
                // account, so the answer's timing does not tell which emails have accounts.
                await signInDecoy.check(input.tenantId, formValue(input.formFields, 'password') ?? '', input.userContext)
              }
              if (result.status !== 'OK') return result
              const session = await appOf(input.options.req).identity.adopt(libraryRequest(input), result.session, {
                email: formValue(input.formFields, 'email') ?? '',
                name: undefined
              })
              return { ...result, session }
            }),
            // A new password ends every session of the account, on every device (the library
            // changes the password only), and lifts the account's sign-in lock.
            passwordResetPOST: original.passwordResetPOST && (async (input) => {
              const result = await original.passwordResetPOST!(input)
              if (result.status !== 'OK') return result
              const { log: requestLog, sessionRevocations, signInGuard } = appOf(input.options.req)
              signInGuard.passwordReset(normalizeEmail(result.email))
              try {
                const ended = await sessionRevocations.revokeUser(result.user.id, 'passwordReset')
                requestLog.info(ended, 'password reset: ended every session of the account')
              } catch (error) {
                // The password has changed and its reset token is spent: the answer stays OK.
                requestLog.error({ err: error }, 'password reset: the account\'s sessions could not be ended')
              }
              return result
            }),
            generatePasswordResetTokenPOST: original.generatePasswordResetTokenPOST && (async (input) => {
              const formFields = input.formFields.map((field) => field.id === 'email' && typeof field.value === 'string'
                ? { ...field, value: normalizeEmail(field.value) }
                : field)
              // The answer is the same whether or not the account exists, and so is its timing:
              // for an account the work (a reset token at the core, the mail) takes longer, so it
              // goes on after the answer. A failure there is the service's to log, not the asker's.
              const requestLog = appOf(input.options.req).log
              original.generatePasswordResetTokenPOST!({ ...input, formFields }).then((result) => {
                if (result.status === 'GENERAL_ERROR') requestLog.warn({ reason: result.message }, 'password reset request not carried out')
              }, (error: unknown) => {
                requestLog.error({ err: error }, 'password reset request failed')
              })
              return { status: 'OK' }
            })
          })
        }
      }),
      EmailVerification.init({
        mode: 'OPTIONAL',
        override: {
          functions: (original) => ({
            ...original,
            // A link followed proves the address at once (billing's one trial per verified email
            // among others), not only from the next sign-in on.
            verifyEmailUsingToken: async (input) => {
              const result = await original.verifyEmailUsingToken(input)
              const request = supertokens.getRequestFromUserContext(input.userContext)
              if (result.status === 'OK' && request !== undefined) {
                await appOf(request).users.proven({ userId: result.user.recipeUserId.getAsString(), verifiedEmail: normalizeEmail(result.user.email), providerAccounts: [] })
              }
              return result
            }
          })
        },
        emailDelivery: {
          ...(smtp === undefined ? {} : { service: new EmailVerificationSMTPService({ smtpSettings: smtp }) }),
          override: (original) => ({
            ...original,
            sendEmail: async (input) => {
              const decision = accountEmailDelivery('emailVerification', input.emailVerifyLink, config)
              if (decision.deliver) {
                await original.sendEmail(input)
                return
              }
              loggerFor(input.userContext, log).info({ emailVerifyLink: decision.link, nodeEnv }, 'email verification link (not delivered in test)')
            }
          })
        }
      }),
      UserMetadata.init(),
      // Provider sign-in is offered only when a provider is configured.
      ...(providers.length > 0
        ? [ThirdParty.init({
            signInAndUpFeature: { providers: providers.map(withPkceAndNonce) },
            override: {
              functions: (original) => ({
                ...original,
                // Provider accounts get a canonical id too; joining them with other logins of the
                // same person follows the identity rules of provider sign-in (signInUpPOST below).
                signInUp: async (input) => {
                  const request = supertokens.getRequestFromUserContext(input.userContext)
                  if (request !== undefined) {
                    // Checked before the library creates or updates anything: a grant without the
                    // calendar or without offline access signs nobody in.
                    const refusal = await appOf(request).providerAuth.grantRefusal(input.thirdPartyId, input.thirdPartyUserId, input.oAuthTokens as Record<string, unknown>)
                    if (refusal !== undefined) return { status: 'SIGN_IN_UP_NOT_ALLOWED', reason: refusal }
                  }
                  const result = await original.signInUp(input).catch(async (error: unknown) => {
                    // The library reads the new login twice (the core's answer, then the user by
                    // that id). A concurrent first login of the same account can map the id to its
                    // canonical one in between, and the library then refuses its own reads. Asked
                    // again, both reads see the mapping.
                    if (error instanceof Error && error.message.includes('recipeUserId and user is inconsistent')) return await original.signInUp(input)
                    throw error
                  })
                  if (result.status !== 'OK' || request === undefined) return result
                  return await appOf(request).identity.withCanonicalMapping(result, async () => mintUserId())
                }
              }),
              apis: (original) => ({
                ...original,
                // Only the service's own callback may receive a provider's code.
                authorisationUrlGET: original.authorisationUrlGET && (async (input) => {
                  if (!isAllowedRedirectUri(input.redirectURIOnProviderDashboard, config.web.url)) {
                    throw new TypedHttpError(400, 'REDIRECT_URI_NOT_ALLOWED', 'The redirect URI is not this service\'s provider callback')
                  }
                  return await original.authorisationUrlGET!(input)
                }),
                signInUpPOST: original.signInUpPOST && (async (input) => {
                  // Both refusals come before the library exchanges anything with the provider.
                  const redirect = 'redirectURIInfo' in input ? input.redirectURIInfo : undefined
                  if (redirect === undefined) {
                    throw new TypedHttpError(400, 'AUTHORIZATION_CODE_REQUIRED', 'Provider sign-in takes the authorization code of the provider\'s redirect')
                  }
                  if (!isAllowedRedirectUri(redirect.redirectURIOnProviderDashboard, config.web.url)) {
                    throw new TypedHttpError(400, 'REDIRECT_URI_NOT_ALLOWED', 'The redirect URI is not this service\'s provider callback')
                  }
                  const result = await original.signInUpPOST!(input).catch((error: unknown) => {
                    // The library reports a provider's refusal of the code (reused, expired,
                    // forged) as a plain error carrying the provider's status.
                    if (error instanceof Error && /^Received response with status 4\d\d/.test(error.message)) {
                      throw new TypedHttpError(400, 'AUTHORIZATION_CODE_REJECTED', 'The provider did not accept the authorization code; sign in again')
                    }
                    throw error
                  })
                  if (result.status !== 'OK') return result
                  const method = result.user.loginMethods.find((login) => login.recipeId === 'thirdparty' && login.thirdParty?.id === input.provider.id)
                  if (method?.thirdParty === undefined) throw new Error('the provider login is missing from the library\'s answer')
                  const fastifyRequest = input.options.req.original as FastifyRequest
                  const { session, summary } = await fastifyRequest.server.providerAuth.signedIn(libraryRequest(input), result.session, {
                    thirdPartyId: input.provider.id,
                    thirdPartyUserId: method.thirdParty.userId,
                    email: method.email ?? '',
                    rawUserInfo: result.rawUserInfoFromProvider,
                    oAuthTokens: result.oAuthTokens as Record<string, unknown>
                  })
                  signInSummaries.set(fastifyRequest, summary)
                  return { ...result, session }
                })
              })
            }
          })]
        : []),
      Session.init({
        getTokenTransferMethod: ({ req, forCreateNewSession }) => {
          const mode = requestedAuthMode(req)
          if (mode === 'header' || mode === 'cookie') return mode
          // Browsers that say nothing get cookies; verification accepts either carrier.
          return forCreateNewSession ? 'cookie' : 'any'
        },
        getResponseHeaderNameForTokenType: (req, tokenType) => {
          const family = req.getHeaderValue('sx-auth-mode') !== undefined ? 'sx' : 'st'
          return `${family}-${tokenType}-token`
        },
        // Browsers must send a custom header on state-changing calls, which a cross-site form
        // cannot do and CORS allows only for the configured origins.
        antiCsrf: 'VIA_CUSTOM_HEADER',
        errorHandlers: {
          // The library's own handling (revoke the session, answer 401), plus: the session's
          // access tokens, which stay valid by themselves, are refused everywhere from now on.
          onTokenTheftDetected: async (sessionHandle, userId, _recipeUserId, request, response, userContext) => {
            await Session.revokeSession(sessionHandle, userContext)
            const app = appOf(request)
            await app.sessionRevocations.sessionEnded({ sessionHandle, userId, reason: 'tokenTheft' })
            app.log.warn('refresh token reused: the session was ended')
            response.setStatusCode(401)
            response.sendJSONResponse({ message: 'token theft detected' })
          }
        },
        override: {
          functions: (original) => ({
            ...original,
            getSession: async (input) => await verifiedOrUnavailable(original.getSession(input), input.accessToken, coreAnswers)
          }),
          apis: (original) => ({
            ...original,
            signOutPOST: original.signOutPOST && (async (input) => {
              const session = input.session
              const result = await original.signOutPOST!(input)
              if (session !== undefined) {
                await appOf(input.options.req).signOut.afterSignOut({ userId: session.getUserId(), sessionHandle: session.getHandle() })
              }
              return result
            })
          })
        }
      })
    ]
  })
}

export function sessionCoreUnavailable (): TypedHttpError {
  return new TypedHttpError(503, 'SESSION_SERVICE_UNAVAILABLE', 'Sessions cannot be checked right now; try again shortly', {}, SESSION_CORE_RETRY_AFTER_SECONDS)
}

/**
 * A valid session is never refused because the session core is down: a 401 makes clients refresh
 * and then sign the person out, so an outage answers 503 with Retry-After instead. The library
 * reports signing keys it could not fetch as it reports a forged token (try refresh), so a refused
 * token that has not expired is followed by a look at the core.
 */
async function verifiedOrUnavailable<T> (verification: Promise<T>, accessToken: string | undefined, coreAnswers: () => Promise<boolean>): Promise<T> {
  try {
    return await withDeadline(verification, SESSION_VERIFY_DEADLINE_MS, sessionCoreUnavailable)
  } catch (error) {
    if (isSessionCoreUnavailableError(error)) throw sessionCoreUnavailable()
    if (error instanceof Session.Error && error.type === Session.Error.TRY_REFRESH_TOKEN && accessToken !== undefined) {
      const expiry = claimedExpiry(accessToken)
      if (expiry !== undefined && expiry > Date.now() && !await coreAnswers()) throw sessionCoreUnavailable()
    }
    throw error
  }
}

/**
 * A sign-in of Google or Microsoft (forcePKCE) carries PKCE S256 and an OIDC nonce derived from
 * the verifier (lib/pkce.ts): the library's authorization URL gets the nonce, and the exchange
 * refuses, before anything is created, a sign-in without the verifier or whose ID token carries
 * another nonce (an ID token or code from an authorization this browser did not begin).
 */
function withPkceAndNonce (provider: SignInProvider): SignInProvider & { override?: (original: TypeProvider) => TypeProvider } {
  if (provider.config.forcePKCE !== true) return provider
  return {
    ...provider,
    override: (original) => {
      if (original.type !== 'oauth2') return original
      return {
        ...original,
        getAuthorisationRedirectURL: async (input) => {
          const answer = await original.getAuthorisationRedirectURL(input)
          if (answer.pkceCodeVerifier === undefined) return answer
          const url = new URL(answer.urlWithQueryParams)
          url.searchParams.set('nonce', await oidcNonceFor(answer.pkceCodeVerifier))
          return { ...answer, urlWithQueryParams: url.toString() }
        },
        exchangeAuthCodeForOAuthTokens: async (input) => {
          const verifier = input.redirectURIInfo.pkceCodeVerifier
          if (verifier === undefined || verifier === '') {
            throw new TypedHttpError(400, 'PKCE_VERIFIER_REQUIRED', 'A provider sign-in takes the PKCE code verifier of its authorization (redirectURIInfo.pkceCodeVerifier)')
          }
          const tokens = await original.exchangeAuthCodeForOAuthTokens(input) as { id_token?: unknown }
          // The signature is checked by the library right after (getUserInfo, against the provider's keys).
          const nonce = typeof tokens.id_token === 'string' ? decodeJwt(tokens.id_token)['nonce'] : undefined
          if (nonce !== await oidcNonceFor(verifier)) {
            throw new TypedHttpError(400, 'NONCE_MISMATCH', 'The provider\'s ID token was not issued for this sign-in; sign in again')
          }
          return tokens
        }
      }
    }
  }
}

// Access tokens are verified locally by default. A long-lived stream also asks the session core,
// so a token from a session that was signed out cannot open a new one.
function sessionVerifier (options: { checkDatabase: boolean }) {
  const verify = verifySession({ checkDatabase: options.checkDatabase })
  return async function requireSession (request: FastifyRequest, reply: FastifyReply) {
    await verify(request as Parameters<typeof verify>[0], reply)
    const verified = (request as FastifyRequest & { session?: Session.SessionContainer }).session
    if (verified === undefined) return
    const { sessionRevocations } = request.server
    // Access tokens are checked locally: one of a session that ended (sign-out, password reset,
    // token theft, a dead provider grant) is refused here rather than when it expires.
    if (sessionRevocations.isRevoked(verified.getHandle())) {
      throw new Session.Error({ type: Session.Error.UNAUTHORISED, message: 'session revoked', payload: { clearTokens: true } })
    }
    const { exp, iat } = verified.getAccessTokenPayload() as { exp?: unknown, iat?: unknown }
    if (typeof exp === 'number' && typeof iat === 'number') sessionRevocations.noteAccessTokenLifetime((exp - iat) * 1000)
    request.userId = verified.getUserId()
  }
}

export function isSessionLibraryError (error: unknown): boolean {
  return supertokens.Error.isErrorFromSuperTokens(error)
}

export const sessionErrorHandler = supertokensErrorHandler()

export default fp(async function session (fastify) {
  initSessionLibrary(fastify.config, fastify.log)

  // The library answers its own routes (sign-up, sign-in, sign-out, refresh, password reset,
  // provider sign-in) under /api/auth. They are not Fastify routes: they are served from this
  // scope's not-found path, so the library's hook runs for /api/auth/* only and costs nothing
  // on every other route.
  await fastify.register(async function sessionLibraryRoutes (auth) {
    await auth.register(supertokensPlugin)
    auth.setNotFoundHandler((request, reply) => { reply.code(404).send(notFoundBody(request.method, request.url)) })
    // Errors of the library's routes go to the app's one error handler (typed refusals keep their
    // status, code and Retry-After; an unavailable session core is a 503; a 5xx hides its
    // message). This scope is made before the app sets that handler, so without this its errors
    // would reach Fastify's default, which does neither.
    auth.setErrorHandler(async (error, request, reply) => { await fastify.errorHandler(error, request, reply) })
    // The library reads its parameters from the body as an object: any other JSON (null, a number,
    // an array) would fail inside it as a 500. Before its own preHandler hook, which answers.
    auth.addHook('preValidation', async (request, reply) => {
      const body: unknown = request.body
      if (body === undefined || (typeof body === 'object' && body !== null && !Array.isArray(body))) return
      return await reply.code(400).send(errorBody(400, 'The body must be a JSON object', 'BODY_NOT_AN_OBJECT'))
    })
    auth.addHook('onSend', async (request, _reply, payload) => {
      const summary = signInSummaries.get(request)
      if (summary === undefined || typeof payload !== 'string') return payload
      signInSummaries.delete(request)
      const body = JSON.parse(payload) as Record<string, unknown>
      return body['status'] === 'OK' ? JSON.stringify({ ...body, summary }) : payload
    })
  }, { prefix: AUTH_BASE_PATH })

  fastify.decorateRequest('userId', '')
  fastify.decorate('requireSession', sessionVerifier({ checkDatabase: false }))
  fastify.decorate('requireLiveSession', sessionVerifier({ checkDatabase: true }))
}, { name: 'session', dependencies: ['config', 'identity', 'sign-out', 'provider-auth', 'session-revocations', 'auth-rate-limit'] })
