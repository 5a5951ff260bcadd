// The provider sends the browser back here after the consent screen (served under
// sync.callbackBaseUrl, which the backend proxies as /sync/*). Public: the signed, single-use state
// is what ties the request to a user.
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { OAuthCallbackQuerySchema, ProviderSchema } from '../../../schemas/sync/index.js'

const oauth: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/:provider/callback', {
    schema: {
      description: 'Finishes a provider connect and redirects (302) to sync.postConnectRedirectUrl with `status` ' +
        '(connected, denied, expired, mismatch, conflict, wrong_browser or error), `provider`, `intent` and `cid`. ' +
        'Finishes only in the browser that began: the backend\'s proxy passes its connect binder in x-calendar-connect-binder',
      params: Type.Object({ provider: ProviderSchema }),
      querystring: OAuthCallbackQuerySchema,
      // No body: only the Location header matters.
      response: { 302: Type.Unsafe<undefined>(Type.Null({ description: 'The browser goes to the Location header' })) }
    }
  }, async (request, reply) => {
    const result = await fastify.syncConnect.callback({
      provider: request.params.provider,
      query: request.query,
      method: request.method,
      url: request.url,
      headers: request.headers
    })
    // The authorization code and state are in this URL; the answer must not be kept anywhere.
    return reply.code(302).header('cache-control', 'no-store').header('referrer-policy', 'no-referrer').header('location', result.location).send(undefined)
  })
}

export default oauth
