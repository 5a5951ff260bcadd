import type { FastifyInstance } from 'fastify'
import type { CdiBody, CdiMethod, CdiPath, CdiQuery, CdiReply } from './cdi.js'
import type { CoreContext } from './context.js'
import { BadRequest } from './input.js'

interface CdiRequest<P extends CdiPath, M extends CdiMethod> {
  body: CdiBody<P, M> | undefined
  query: CdiQuery<P, M> | undefined
  tenantId: string
}

export type CdiHandler<P extends CdiPath, M extends CdiMethod> = (request: CdiRequest<P, M>) => Promise<CdiReply<P, M>>

/**
 * Registers one CDI endpoint. The path is the schema's own key (`/<tenantId>/recipe/signup`), so
 * the compiler ties the handler's body, query and reply to that endpoint's declared shapes.
 * Business outcomes are always HTTP 200 with a `status`; the SDK throws on any other code.
 */
export function cdiRoute<P extends CdiPath, M extends CdiMethod> (
  app: FastifyInstance,
  ctx: CoreContext,
  method: M,
  path: P,
  handler: NoInfer<CdiHandler<P, M>>,
  options: { onUnknownTenant?: NoInfer<() => CdiReply<P, M>> } = {}
): void {
  app.route({
    method: method.toUpperCase() as 'GET' | 'POST' | 'PUT',
    url: path.replace('<tenantId>', ':tenantId'),
    handler: async (request, reply) => {
      const params = request.params as { tenantId?: string }
      const tenantId = params.tenantId ?? 'public'
      if (!ctx.tenants.has(tenantId)) {
        if (options.onUnknownTenant !== undefined) return reply.send(options.onUnknownTenant())
        throw new BadRequest(`Tenant with the following connectionURIDomain, appId and tenantId combination not found: (, public, ${tenantId})`)
      }
      const result = await handler({
        body: (request.body ?? undefined) as CdiBody<P, M> | undefined,
        query: (request.query ?? undefined) as CdiQuery<P, M> | undefined,
        tenantId
      })
      return reply.send(result)
    }
  })
}
