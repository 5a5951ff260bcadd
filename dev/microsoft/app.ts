import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify'
import { isControlPath, pathOf, scaffold } from '../stand-in/app.js'
import { AuthorizePageError, ControlError, GraphError, TokenError, graphErrors } from './errors.js'
import { faultError } from './faults.js'
import { controlRoutes } from './routes-control.js'
import { graphRequestIds, graphRoutes, sendGraphError } from './routes-graph.js'
import { authorizePageError, identityRoutes } from './routes-identity.js'
import type { MicrosoftState } from './state.js'

// Operations are counted under names like `event.list`, `calendarView.delta`, `oauth2.token`.

type Family = 'graph' | 'control' | 'authorize' | 'token'

/** Which error shape a path answers with: Graph, the control surface, the sign-in pages, or the identity platform's JSON. */
function familyOf (path: string): Family {
  if (path.startsWith('/v1.0/')) return 'graph'
  if (isControlPath(path)) return 'control'
  if (/^\/[^/]+\/oauth2\/v2\.0\/(authorize|logout)$/.test(path)) return 'authorize'
  return 'token'
}

/** The stand-in's HTTP surface on one origin. Never listens: index.ts owns the server. */
export async function microsoftApp (app: FastifyInstance, options: { state: MicrosoftState }): Promise<void> {
  const { state } = options

  // Graph's request ids are set before a fault can fire, so a faulted answer carries them too.
  app.addHook('onRequest', async (request, reply) => {
    if (familyOf(pathOf(request)) === 'graph') graphRequestIds(request, reply)
  })
  await scaffold(app, {
    faults: state.faults,
    counters: state.counters,
    faultError: (fault, path) => faultError(fault, familyOf(path) === 'graph' ? 'graph' : 'token')
  })

  const sendToken = (reply: FastifyReply, error: TokenError): FastifyReply =>
    reply.code(error.statusCode).header('cache-control', 'no-store, no-cache').send(error.body(new Date(state.now()), state.origin))

  app.setErrorHandler((error: FastifyError | Error, request, reply) => {
    const family = familyOf(pathOf(request))
    if (error instanceof GraphError) return sendGraphError(request, reply, error, state.origin)
    if (error instanceof TokenError) return sendToken(reply, error)
    if (error instanceof AuthorizePageError) return authorizePageError(reply, error)
    if (error instanceof ControlError) return reply.code(error.statusCode).send({ error: error.message })
    const status = (error as FastifyError).statusCode ?? 500
    if (status >= 500) request.log.error({ err: error }, 'microsoft stand-in request failed')
    if (family === 'graph') {
      if (status >= 500) return sendGraphError(request, reply, graphErrors.internal(), state.origin)
      if (status === 413) return sendGraphError(request, reply, new GraphError(413, 'RequestEntityTooLarge', 'The request is too large.'), state.origin)
      return sendGraphError(request, reply, graphErrors.badBody('Unable to read JSON request payload. Please ensure Content-Type header is set and payload is of valid JSON format.'), state.origin)
    }
    if (family === 'control') return reply.code(status).send({ error: status >= 500 ? 'internal error' : error.message })
    if (family === 'authorize') return authorizePageError(reply, new AuthorizePageError(status >= 500 ? 500 : 400, status >= 500 ? 50000 : 90023, status >= 500 ? 'There was an error issuing a token.' : error.message))
    return sendToken(reply, status >= 500
      ? new TokenError(500, 'server_error', 50000, 'There was an error issuing a token or an issue with our sign-in service.')
      : new TokenError(400, 'invalid_request', 90014, error.message))
  })

  app.setNotFoundHandler((request, reply) => {
    const path = pathOf(request)
    const family = familyOf(path)
    request.log.warn({ method: request.method, path }, 'call outside the supported Microsoft subset')
    if (family === 'graph') {
      const segments = path.split('/').filter((segment) => segment !== '')
      return sendGraphError(request, reply, graphErrors.unknownSegment(segments[segments.length - 1] ?? ''), state.origin)
    }
    if (family === 'control') return reply.code(404).send({ error: `no control path ${request.method} ${path}` })
    return reply.code(404).type('text/plain').send('Not Found')
  })

  await app.register(identityRoutes, { state })
  await app.register(graphRoutes, { state, prefix: '/v1.0' })
  await app.register(controlRoutes, { state, prefix: '/_control' })
}
