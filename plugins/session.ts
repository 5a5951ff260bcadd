import fp from 'fastify-plugin'
import formbody from '@fastify/formbody'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import supertokens from 'supertokens-node'
import { plugin as supertokensPlugin, errorHandler as supertokensErrorHandler } from 'supertokens-node/framework/fastify'
import type { APIInterface as EmailPasswordAPI } from 'supertokens-node/recipe/emailpassword/types'
import Session from 'supertokens-node/recipe/session'
import { verifySession } from 'supertokens-node/recipe/session/framework/fastify'
import EmailPassword from 'supertokens-node/recipe/emailpassword'
import { SMTPService as EmailPasswordSMTPService } from 'supertokens-node/recipe/emailpassword/emaildelivery'
import EmailVerification from 'supertokens-node/recipe/emailverification'
import { SMTPService as EmailVerificationSMTPService } from 'supertokens-node/recipe/emailverification/emaildelivery'
import UserMetadata from 'supertokens-node/recipe/usermetadata'
import ThirdParty from 'supertokens-node/recipe/thirdparty'
import { signInProviders } from '../lib/identity-providers.js'
import type { Config } from '../schemas/config.js'
import { chooseCanonicalUserId, isCanonicalUserId, mintUserId, normalizeEmail } from '../lib/identity.js'
import { accountEmailDelivery, smtpSettings } from '../lib/email-delivery.js'
import { notFoundBody } from '../lib/error-bodies.js'

declare module 'fastify' {
  interface FastifyInstance {
    requireSession: (request: FastifyRequest, reply: FastifyReply) => Promise<void>
    requireLiveSession: (request: FastifyRequest, reply: FastifyReply) => Promise<void>
    // Called after a session is revoked by sign-out, so streams opened with it can close.
    onSessionRevoked: (listener: SessionRevokedListener) => void
    notifySessionRevoked: (revoked: { userId: string, sessionHandle: string }) => Promise<void>
  }
  interface FastifyRequest {
    // The canonical 24-hex user id of the verified session.
    userId: string
  }
}

export type SessionRevokedListener = (revoked: { userId: string, sessionHandle: string }) => void | Promise<void>

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

// The session library keeps one configuration per process; the per-app state it needs (the
// user store, the logger) is reached through the request, so several app instances in one
// process (tests, benchmarks) each use their own.
function initSessionLibrary (config: Config, log: FastifyInstance['log']) {
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
        signUpFeature: { formFields: [{ id: 'name', optional: true }] },
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
              log.info({ passwordResetLink: decision.link, nodeEnv }, 'password reset link (not delivered in test)')
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
              if (result.status !== 'OK') return result
              // A user record that already owns this email keeps its id; otherwise a new one.
              return await withCanonicalMapping(result, async () => {
                const request = supertokens.getRequestFromUserContext(input.userContext)
                return (request ? await appOf(request).users.findIdByEmail(email) : undefined) ?? mintUserId()
              })
            },
            signIn: async (input) => await original.signIn({ ...input, email: normalizeEmail(input.email) })
          }),
          apis: (original) => ({
            ...original,
            signUpPOST: original.signUpPOST && (async (input) => {
              const result = await original.signUpPOST!(input)
              if (result.status !== 'OK') return result
              const session = await adoptCanonicalIdentity(input, result.session, formValue(input.formFields, 'name'))
              return { ...result, session }
            }),
            signInPOST: original.signInPOST && (async (input) => {
              const result = await original.signInPOST!(input)
              if (result.status !== 'OK') return result
              const session = await adoptCanonicalIdentity(input, result.session, undefined)
              return { ...result, session }
            }),
            generatePasswordResetTokenPOST: original.generatePasswordResetTokenPOST && (async (input) => {
              const formFields = input.formFields.map((field) => field.id === 'email' && typeof field.value === 'string'
                ? { ...field, value: normalizeEmail(field.value) }
                : field)
              const result = await original.generatePasswordResetTokenPOST!({ ...input, formFields })
              // Whether or not the account exists, the answer is the same.
              return result.status === 'PASSWORD_RESET_NOT_ALLOWED' ? { status: 'OK' } : result
            })
          })
        }
      }),
      EmailVerification.init({
        mode: 'OPTIONAL',
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
              log.info({ emailVerifyLink: decision.link, nodeEnv }, 'email verification link (not delivered in test)')
            }
          })
        }
      }),
      UserMetadata.init(),
      // Provider sign-in is offered only when a provider is configured.
      ...(providers.length > 0
        ? [ThirdParty.init({
            signInAndUpFeature: { providers },
            override: {
              functions: (original) => ({
                ...original,
                // Provider accounts get a canonical id too; joining them with other logins of the
                // same person follows the identity rules of provider sign-in.
                signInUp: async (input) => {
                  const result = await original.signInUp(input)
                  return result.status === 'OK' ? await withCanonicalMapping(result, async () => mintUserId()) : result
                }
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
        override: {
          apis: (original) => ({
            ...original,
            signOutPOST: original.signOutPOST && (async (input) => {
              const session = input.session
              const result = await original.signOutPOST!(input)
              if (session !== undefined) {
                await afterSignOut(input.options.req, session.getUserId(), session.getHandle())
              }
              return result
            })
          })
        }
      })
    ]
  })
}

interface NewLoginResult {
  user: { id: string, loginMethods: Array<{ recipeUserId: ReturnType<typeof supertokens.convertToRecipeUserId> }> }
  recipeUserId: ReturnType<typeof supertokens.convertToRecipeUserId>
}

// Maps a login that is new to the session library onto a canonical ObjectId user id, so its
// sessions carry that id from their first token. An existing mapping is kept.
async function withCanonicalMapping<T extends NewLoginResult> (result: T, chooseExternalUserId: () => Promise<string>): Promise<T> {
  if (result.user.loginMethods.length !== 1) return result
  const existing = await supertokens.getUserIdMapping({ userId: result.user.id, userIdType: 'SUPERTOKENS' })
  let externalUserId: string
  if (existing.status === 'OK') {
    externalUserId = existing.externalUserId
  } else if (isCanonicalUserId(result.user.id)) {
    return result
  } else {
    externalUserId = await chooseExternalUserId()
    await supertokens.createUserIdMapping({ superTokensUserId: result.user.id, externalUserId })
  }
  const recipeUserId = supertokens.convertToRecipeUserId(externalUserId)
  const loginMethod = result.user.loginMethods[0]
  if (loginMethod) loginMethod.recipeUserId = recipeUserId
  result.user.id = externalUserId
  return { ...result, recipeUserId }
}

type SignInUpInput = Pick<Parameters<NonNullable<EmailPasswordAPI['signUpPOST']>>[0], 'formFields' | 'options' | 'tenantId' | 'userContext'>

// Upserts the user record and makes sure the session names the canonical user: an existing user
// with the same normalized email wins over the id the library issued.
async function adoptCanonicalIdentity (
  input: SignInUpInput,
  session: Session.SessionContainer,
  name: string | undefined
): Promise<Session.SessionContainer> {
  const app = appOf(input.options.req)
  const email = normalizeEmail(formValue(input.formFields, 'email') ?? '')
  const sessionUserId = session.getUserId()
  const canonicalUserId = chooseCanonicalUserId({
    existingUserIdForEmail: await app.users.findIdByEmail(email),
    sessionUserId
  })
  await app.users.recordAuthentication(canonicalUserId, { email, name, now: new Date() })
  if (canonicalUserId === sessionUserId) return session

  // The session library must know the canonical id before it can issue a session for it: when no
  // login is mapped to it yet, this login's mapping moves to it.
  const canonicalMapping = await supertokens.getUserIdMapping({ userId: canonicalUserId, userIdType: 'EXTERNAL' })
  if (canonicalMapping.status !== 'OK') {
    const ownMapping = await supertokens.getUserIdMapping({ userId: sessionUserId, userIdType: 'ANY' })
    const superTokensUserId = ownMapping.status === 'OK' ? ownMapping.superTokensUserId : sessionUserId
    if (ownMapping.status === 'OK') await supertokens.deleteUserIdMapping({ userId: superTokensUserId, userIdType: 'SUPERTOKENS', force: true })
    await supertokens.createUserIdMapping({ superTokensUserId, externalUserId: canonicalUserId, force: true })
  }

  // Revoke first: creating the new session then writes its tokens over the old ones.
  await Session.revokeSession(session.getHandle())
  app.log.info({ sessionHandle: session.getHandle() }, 'session remapped to the canonical user id')
  return await Session.createNewSession(
    input.options.req, input.options.res, input.tenantId, supertokens.convertToRecipeUserId(canonicalUserId), {}, {}, input.userContext
  )
}

async function afterSignOut (req: BaseRequest, userId: string, sessionHandle: string) {
  await appOf(req).notifySessionRevoked({ userId, sessionHandle })
}

// Access tokens are verified locally by default. A long-lived stream also asks the session core,
// so a token from a session that was signed out cannot open a new one.
function sessionVerifier (options: { checkDatabase: boolean }) {
  const verify = verifySession({ checkDatabase: options.checkDatabase })
  return async function requireSession (request: FastifyRequest, reply: FastifyReply) {
    await verify(request as Parameters<typeof verify>[0], reply)
    const verified = (request as FastifyRequest & { session?: Session.SessionContainer }).session
    if (verified !== undefined) request.userId = verified.getUserId()
  }
}

export function isSessionLibraryError (error: unknown): boolean {
  return supertokens.Error.isErrorFromSuperTokens(error)
}

export const sessionErrorHandler = supertokensErrorHandler()

export default fp(async function session (fastify) {
  initSessionLibrary(fastify.config, fastify.log)

  await fastify.register(formbody)
  // The library answers its own routes (sign-up, sign-in, sign-out, refresh, password reset,
  // provider sign-in) under /api/auth. They are not Fastify routes: they are served from this
  // scope's not-found path, so the library's hook runs for /api/auth/* only and costs nothing
  // on every other route.
  await fastify.register(async function sessionLibraryRoutes (auth) {
    await auth.register(supertokensPlugin)
    auth.setNotFoundHandler((request, reply) => { reply.code(404).send(notFoundBody(request.method, request.url)) })
  }, { prefix: AUTH_BASE_PATH })

  const listeners: SessionRevokedListener[] = []
  fastify.decorate('onSessionRevoked', (listener: SessionRevokedListener) => { listeners.push(listener) })
  fastify.decorate('notifySessionRevoked', async (revoked: { userId: string, sessionHandle: string }) => {
    for (const listener of listeners) {
      try {
        await listener(revoked)
      } catch (error) {
        // Sign-out has already revoked the session; a follow-up failing must not undo the answer.
        fastify.log.error({ err: error }, 'sign-out follow-up failed')
      }
    }
  })

  fastify.decorateRequest('userId', '')
  fastify.decorate('requireSession', sessionVerifier({ checkDatabase: false }))
  fastify.decorate('requireLiveSession', sessionVerifier({ checkDatabase: true }))
}, { name: 'session', dependencies: ['config', 'users'] })
