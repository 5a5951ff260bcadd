import { Readable } from 'node:stream'
import fp from 'fastify-plugin'
import httpProxy from '@fastify/http-proxy'
import cookie from '@fastify/cookie'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import Session from 'supertokens-node/recipe/session'
import { INTERNAL_AUTH_HEADERS, signInternalRequest } from '../../lib/internal-auth.js'
import { errorBody } from '../../lib/error-bodies.js'
import { binderCookieName, binderCookieOptions, callbackProvider } from '../../lib/connect-binder.js'
import { BROWSER_BINDER_HEADER } from '../../schemas/sync/index.js'
import { REQUEST_ID_HEADER } from '../../lib/request-id.js'

// Specification, Endpoints: `/sync/*` are the Sync service's public OAuth and webhook callbacks,
// proxied to it (sync.callbackBaseUrl points here) and verified inside the Sync service. Only
// those public parts are reachable: the internal API of Sync is never.
const PUBLIC_PARTS = ['oauth', 'webhooks', 'maintenance'] as const
const SYNC_RETRY_AFTER_SECONDS = 5

// Headers a browser or a provider must not pass on to Sync: the backend's own session tokens,
// anything that would pose as the backend's signature or name a user, and a connect binder of
// its own choosing (the proxy passes the cookie's). The scheduler calling /maintenance
// proves itself with an ID token in Authorization, which Sync verifies, so that one goes through.
// `expect` belongs to the hop it came on: this server already answered 100 Continue and read the
// body, and undici refuses to send a request carrying it (every such request used to answer 500).
const STRIPPED = [
  'cookie', 'sx-access-token', 'sx-refresh-token', 'expect', 'x-calendar-session-user', BROWSER_BINDER_HEADER, ...Object.values(INTERNAL_AUTH_HEADERS)
]

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in user of a proxied OAuth callback, when the browser has a live session. */
    proxiedSessionUser: string | null
    /** The connect binder the browser holds for the callback's provider (lib/connect-binder.ts). */
    proxiedConnectBinder: string | null
  }
}

/**
 * The user a live session of this browser names, or no one: a missing, expired, signed-out or
 * revoked session vouches for nobody. The callback goes on without one (the connect binder ties it
 * to its browser), so a session core that does not answer is no one too, not an error page.
 */
async function liveSessionUser (request: FastifyRequest, reply: FastifyReply): Promise<string | null> {
  try {
    const session = await Session.getSession(request, reply, { sessionRequired: false, checkDatabase: true })
    if (session === undefined || request.server.sessionRevocations.isRevoked(session.getHandle())) return null
    return session.getUserId()
  } catch (error) {
    if (!Session.Error.isErrorFromSuperTokens(error)) request.log.warn({ err: error }, 'the session of a connect callback could not be checked; it vouches for no one')
    return null
  }
}

export default fp(async function syncProxy (fastify) {
  const { serviceUrl, internalAuthToken, callbackBaseUrl } = fastify.config.sync
  const binderCookie = binderCookieOptions(callbackBaseUrl)
  fastify.decorateRequest('proxiedSessionUser', null)
  fastify.decorateRequest('proxiedConnectBinder', null)

  await fastify.register(async function publicParts (proxied) {
    // Bodies are read whole, within the server's body limit (413 past it, however the length is
    // sent), before anything is sent to Sync, and passed on as the bytes that came: a provider's
    // signature covers them. Streaming them through instead would let a body of any size reach
    // Sync, and a refusal there would break the half-sent request into a 5xx here.
    await proxied.register(cookie, { hook: false })
    proxied.removeAllContentTypeParsers()
    proxied.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => { done(null, Readable.from([body])) })
    for (const part of PUBLIC_PARTS) await registerPart(proxied, part)
  })

  async function registerPart (proxied: FastifyInstance, part: typeof PUBLIC_PARTS[number]): Promise<void> {
    await proxied.register(httpProxy, {
      upstream: serviceUrl,
      prefix: `/sync/${part}`,
      rewritePrefix: `/${part}`,
      // The parser above reads the body; the proxy's own would pass the unread stream on.
      proxyPayloads: false,
      // The OAuth callback learns who is signed in, so Sync can tell a browser that finishes
      // another user's authorization (a mismatch) from the user who started it, and which
      // binder the browser holds, without which Sync finishes nothing.
      preHandler: part === 'oauth'
        ? async (request: FastifyRequest, reply) => {
          request.proxiedSessionUser = await liveSessionUser(request, reply)
          const provider = callbackProvider(request.url)
          request.proxiedConnectBinder = provider === null ? null : proxied.parseCookie(request.headers.cookie ?? '')[binderCookieName(provider)] ?? null
        }
        : undefined,
      replyOptions: {
        // Sync not answering (refused, reset, timed out) is a dependency that is down: 503 with
        // Retry-After, and nothing of the cause (addresses, error codes) reaches the caller.
        onError: (reply, { error }) => {
          reply.request.log.warn({ err: error }, 'Sync service unreachable through the proxy')
          reply.code(503).header('retry-after', String(SYNC_RETRY_AFTER_SECONDS))
            .send(errorBody(503, 'Calendar sync is briefly unavailable; try again shortly', 'SYNC_UNAVAILABLE'))
        },
        // The binder served its one attempt: the browser forgets it, whatever the outcome.
        rewriteHeaders: (headers, request) => {
          const provider = request === undefined ? null : callbackProvider(request.url)
          if (provider === null) return headers
          return { ...headers, 'set-cookie': [proxied.serializeCookie(binderCookieName(provider), '', { ...binderCookie, maxAge: 0 })] }
        },
        rewriteRequestHeaders: (request, headers) => {
          const forwarded: Record<string, string | string[] | undefined> = { ...headers }
          for (const name of STRIPPED) Reflect.deleteProperty(forwarded, name)
          if (!request.url.startsWith('/sync/maintenance')) Reflect.deleteProperty(forwarded, 'authorization')
          if (request.proxiedConnectBinder !== null) forwarded[BROWSER_BINDER_HEADER] = request.proxiedConnectBinder
          // The callback's own id (made or accepted here) names it in Sync's log too.
          forwarded[REQUEST_ID_HEADER] = request.id
          const userId = request.proxiedSessionUser
          if (userId !== null) {
            const path = request.url.replace(/^\/sync/, '')
            Object.assign(forwarded, signInternalRequest({ secret: internalAuthToken, method: request.method, path, userId }, Date.now()))
          }
          return forwarded as typeof headers
        }
      }
    })
  }
}, { name: 'sync-proxy', dependencies: ['config', 'session'] })
