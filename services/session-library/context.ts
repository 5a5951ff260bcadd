import type { FastifyInstance, FastifyRequest } from 'fastify'
import supertokens from 'supertokens-node'
import type { Config } from '../../schemas/config.js'
import type { LibraryRequest } from '../identity.js'

/**
 * The session library keeps one configuration per process; what each app needs (its user store,
 * its logger, its configuration) is reached through the request the library is answering, so
 * several app instances in one process (tests, benchmarks) each use their own.
 */

// The part of the session library's request wrapper the overrides read.
export interface BaseRequest {
  getHeaderValue: (key: string) => string | undefined
  original: unknown
}

type UserContext = Parameters<typeof supertokens.getRequestFromUserContext>[0]

export function appOf (req: BaseRequest): FastifyInstance {
  return (req.original as FastifyRequest).server
}

/** The app serving the library's current request; undefined when the library acts on its own. */
export function appServing (userContext: UserContext): FastifyInstance | undefined {
  const request = supertokens.getRequestFromUserContext(userContext)
  return request === undefined ? undefined : appOf(request)
}

/** What an override needs of the app: the one serving the request, else the app that configured the library. */
export interface AppContext { log: FastifyInstance['log'], config: Config }

export function contextFor (userContext: UserContext, fallback: AppContext): AppContext {
  return appServing(userContext) ?? fallback
}

export function formValue (formFields: Array<{ id: string, value: unknown }>, id: string): string | undefined {
  const value = formFields.find((field) => field.id === id)?.value
  return typeof value === 'string' ? value : undefined
}

export function libraryRequest (input: { options: { req: LibraryRequest['req'], res: LibraryRequest['res'] }, tenantId: string, userContext: LibraryRequest['userContext'] }): LibraryRequest {
  return { req: input.options.req, res: input.options.res, tenantId: input.tenantId, userContext: input.userContext }
}
