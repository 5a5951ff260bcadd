import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify'
import { isControlPath, pathOf, scaffold } from '../stand-in/app.js'
import { ApiError, AuthorizationPageError, ControlError, OAuthError } from './errors.js'
import { faultError } from './faults.js'
import { calendarRoutes } from './routes-calendar.js'
import { controlRoutes } from './routes-control.js'
import { authorizationPageError, oauthRoutes } from './routes-oauth.js'
import type { GoogleState } from './state.js'

// Operations are counted under Google's method ids, e.g. `calendar.events.list`.

type Family = 'calendar' | 'control' | 'authorization' | 'oauth'

/** Which error shape a path answers with: each of Google's endpoints has its own. */
function familyOf (path: string): Family {
  if (path.startsWith('/calendar/')) return 'calendar'
  if (isControlPath(path)) return 'control'
  if (path.startsWith('/o/oauth2/')) return 'authorization'
  return 'oauth'
}

function sendApiError (reply: FastifyReply, error: ApiError): FastifyReply {
  if (error.statusCode === 401) reply.header('www-authenticate', 'Bearer realm="https://accounts.google.com/"')
  return reply.code(error.statusCode).type('application/json; charset=UTF-8').send(error.body())
}

/** The stand-in's HTTP surface on one origin. Never listens: index.ts owns the server. */
export async function googleApp (app: FastifyInstance, options: { state: GoogleState }): Promise<void> {
  const { state } = options

  await scaffold(app, { faults: state.faults, counters: state.counters, faultError })

  app.setErrorHandler((error: FastifyError | Error, request, reply) => {
    const family = familyOf(pathOf(request))
    if (error instanceof ApiError) return sendApiError(reply, error)
    if (error instanceof OAuthError) return reply.code(error.statusCode).send(error.body())
    if (error instanceof AuthorizationPageError) return authorizationPageError(reply, error)
    if (error instanceof ControlError) return reply.code(error.statusCode).send({ error: error.message })
    const status = (error as FastifyError).statusCode ?? 500
    if (status >= 500) request.log.error({ err: error }, 'google stand-in request failed')
    if (family === 'calendar') {
      if (status >= 500) return sendApiError(reply, new ApiError(500, 'backendError', 'Backend Error'))
      if (status === 413) return sendApiError(reply, new ApiError(413, 'uploadTooLarge', 'Request Entity Too Large'))
      return sendApiError(reply, new ApiError(400, 'parseError', 'Parse Error'))
    }
    if (family === 'control') return reply.code(status).send({ error: status >= 500 ? 'internal error' : error.message })
    if (family === 'authorization') {
      return authorizationPageError(reply, new AuthorizationPageError(status >= 500 ? 500 : 400, status >= 500 ? 'server_error' : 'invalid_request', status >= 500 ? 'Something went wrong.' : error.message))
    }
    return reply.code(status >= 500 ? 500 : 400).send(status >= 500
      ? { error: 'internal_failure', error_description: 'Backend Error' }
      : { error: 'invalid_request', error_description: error.message })
  })

  app.setNotFoundHandler((request, reply) => {
    const path = pathOf(request)
    request.log.warn({ method: request.method, path }, 'call outside the supported Google subset')
    if (familyOf(path) === 'calendar') return sendApiError(reply, new ApiError(404, 'notFound', 'Not Found'))
    if (familyOf(path) === 'control') return reply.code(404).send({ error: `no control path ${request.method} ${path}` })
    return reply.code(404).type('text/plain').send('Not Found')
  })

  await app.register(oauthRoutes, { state })
  await app.register(calendarRoutes, { state, prefix: '/calendar/v3' })
  await app.register(controlRoutes, { state, prefix: '/_control' })
}
