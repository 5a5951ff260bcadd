import Session from 'supertokens-node/recipe/session'
import { withDeadline } from '../../lib/deadline.js'
import { TypedHttpError } from '../../lib/error-bodies.js'
import { claimedExpiry, isSessionCoreUnavailableError, SESSION_CORE_RETRY_AFTER_SECONDS, SESSION_VERIFY_DEADLINE_MS } from '../../clients/session-core.js'
import { appOf, type BaseRequest } from './context.js'

// Native clients ask for header mode with the specification's sx-auth-mode; SuperTokens' own
// frontend SDKs send st-auth-mode. Tokens answer under the same family of names.
function requestedAuthMode (req: BaseRequest): string | undefined {
  return (req.getHeaderValue('sx-auth-mode') ?? req.getHeaderValue('st-auth-mode'))?.toLowerCase()
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
 * Sessions: cookies for browsers, headers for native clients (sx- or st- names), a custom header
 * against cross-site forms, a reused refresh token ending the session everywhere, and a core that
 * is down answered as such.
 */
export function sessionRecipe (coreAnswers: () => Promise<boolean>): ReturnType<typeof Session.init> {
  return Session.init({
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
}
