// Request and response shapes of the Core Driver Interface 5.4, taken from the OpenAPI types that
// ship inside supertokens-node, so a handler that drifts from what the SDK expects fails to compile.
import type { paths } from 'supertokens-node/lib/ts/core/versions/5.4/schema'

export type CdiPath = keyof paths
export type CdiMethod = 'get' | 'post' | 'put'

type Operation<P extends CdiPath, M extends CdiMethod> = NonNullable<paths[P][M]>

export type CdiBody<P extends CdiPath, M extends CdiMethod> =
  Operation<P, M> extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never

export type CdiQuery<P extends CdiPath, M extends CdiMethod> =
  Operation<P, M> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never

export type CdiReply<P extends CdiPath, M extends CdiMethod> =
  Operation<P, M> extends { responses: { 200: { content: { 'application/json': infer R } } } } ? R : never

export type CdiUser = NonNullable<Extract<CdiReply<'/user/id', 'get'>, { status: 'OK' }>['user']>
export type CdiSession = NonNullable<Extract<CdiReply<'/<tenantId>/recipe/session', 'post'>, { status: 'OK' }>['session']>
export type CdiTokenInfo = NonNullable<Extract<CdiReply<'/<tenantId>/recipe/session', 'post'>, { status: 'OK' }>['accessToken']>

export const CDI_VERSION = '5.4'
export const DEFAULT_TENANT = 'public'
