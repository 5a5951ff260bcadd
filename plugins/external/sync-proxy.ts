import { Readable } from 'node:stream'
import fp from 'fastify-plugin'
import httpProxy from '@fastify/http-proxy'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import Session from 'supertokens-node/recipe/session'
import { INTERNAL_AUTH_HEADERS, signInternalRequest } from '../../lib/internal-auth.js'
import { errorBody } from '../../lib/error-bodies.js'

// Specification, Endpoints: `/sync/*` are the Sync service's public OAuth and webhook callbacks,
// proxied to it (sync.callbackBaseUrl points here) and verified inside the Sync service. Only
// those public parts are reachable: the internal API of Sync is never.
const PUBLIC_PARTS = ['oauth', 'webhooks', 'maintenance'] as const
const SYNC_RETRY_AFTER_SECONDS = 5

// Headers a browser or a provider must not pass on to Sync: the backend's own session tokens,
// and anything that would pose as the backend's signature. The scheduler calling /maintenance
// proves itself with an ID token in Authorization, which Sync verifies, so that one goes through.
// `expect` belongs to the hop it came on: this server already answered 100 Continue and read the
// body, and undici refuses to send a request carrying it (every such request used to answer 500).
const STRIPPED = ['cookie', 'sx-access-token', 'sx-refresh-token', 'expect', ...Object.values(INTERNAL_AUTH_HEADERS)]

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in user of a proxied OAuth callback, when the browser has a session. */
    proxiedSessionUser: string | null
  }
}

export default fp(async function syncProxy (fastify) {
  const { serviceUrl, internalAuthToken } = fastify.config.sync
  fastify.decorateRequest('proxiedSessionUser', null)

  await fastify.register(async function publicParts (proxied) {
    // Bodies are read whole, within the server's body limit (413 past it, however the length is
    // sent), before anything is sent to Sync, and passed on as the bytes that came: a provider's
    // signature covers them. Streaming them through instead would let a body of any size reach
    // Sync, and a refusal there would break the half-sent request into a 5xx here.
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
      // another user's authorization (a mismatch) from the user who started it.
      preHandler: part === 'oauth'
        ? async (request: FastifyRequest, reply) => {
          const session = await Session.getSession(request, reply, { sessionRequired: false })
          request.proxiedSessionUser = session?.getUserId() ?? null
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
        rewriteRequestHeaders: (request, headers) => {
          const forwarded: Record<string, string | string[] | undefined> = { ...headers }
          for (const name of STRIPPED) Reflect.deleteProperty(forwarded, name)
          if (!request.url.startsWith('/sync/maintenance')) Reflect.deleteProperty(forwarded, 'authorization')
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
