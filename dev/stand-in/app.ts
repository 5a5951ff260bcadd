// The HTTP scaffolding every provider stand-in sets up the same way: bodies as providers' clients
// send them, armed faults before any route runs, and a count per operation after each answer.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import formbody from '@fastify/formbody'
import type { Counters, Faults, Fault, FaultInput } from './faults.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The name requests are counted under (the provider's operation ids, or `control`). */
    operation?: string
  }
}

export const pathOf = (request: FastifyRequest): string => request.url.split('?', 1)[0] ?? ''

export const isControlPath = (path: string): boolean => path.startsWith('/_control')

export interface ScaffoldOptions<I extends FaultInput> {
  faults: Faults<I>
  counters: Counters
  /** The provider's error for a fault that fires on `path`; thrown, so the error handler answers it. */
  faultError: (fault: Fault<I>, path: string) => Error
}

export async function scaffold<I extends FaultInput> (app: FastifyInstance, options: ScaffoldOptions<I>): Promise<void> {
  // Providers' clients send DELETE and POST with a JSON content type and no body at all.
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8')
    if (text === '') {
      done(null, undefined)
      return
    }
    parseJson(request, text, done)
  })
  await app.register(formbody)

  app.addHook('onRequest', async (request, reply) => {
    const path = pathOf(request)
    if (isControlPath(path)) return
    const fault = options.faults.take(request.method, path)
    if (fault === undefined) return
    if (fault.retryAfterSec !== undefined) reply.header('retry-after', String(fault.retryAfterSec))
    throw options.faultError(fault, path)
  })

  app.addHook('onResponse', async (request, reply) => {
    const operation = request.routeOptions.config.operation ?? 'unknown'
    if (operation !== 'control') options.counters.count(operation, reply.statusCode)
  })
}
