import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import { Type, type TSchema } from '@sinclair/typebox'
import { LIBRARY_OPERATIONS, type LibraryOperation } from '../../schemas/session-library.js'
import {
  GoogleWebhookHeadersSchema, MaintenanceResultSchema, MicrosoftWebhookQuerySchema, OAuthCallbackQuerySchema, ProviderSchema, SyncErrorBodySchema
} from '../../schemas/sync/index.js'
import { SECURITY, errorResponse } from '../../schemas/responses.js'

// The OpenAPI document (openapi.json at the root, written by `npm run openapi`) is generated from
// the routes' TypeBox schemas. It is not served: /api/health stays the only unauthenticated route
// of the service's own. Two kinds of operation are not Fastify routes of ours and are described
// from schemas of their own: the session library's routes under /api/auth (its middleware answers
// them) and the Sync service's public callbacks behind the /sync proxy (the proxy's catch-all
// routes would otherwise show as every method of every path, answering 200).

export const OPENAPI_VERSION = '3.1.0'

type JsonObject = Record<string, unknown>
interface Operation extends JsonObject { responses: Record<string, JsonObject> }

/** Only the media types this operation can answer with: JSON unless the schema says otherwise. */
function responseOf (schema: TSchema, mediaType = 'application/json'): JsonObject {
  const { description, ...rest } = schema as TSchema & { description?: string }
  if (schema.type === 'null') return { description: description ?? 'No body' }
  return { description: description ?? 'Answer', content: { [mediaType]: { schema: rest } } }
}

function responsesOf (responses: Record<number, TSchema>): Record<string, JsonObject> {
  return Object.fromEntries(Object.entries(responses).map(([status, schema]) => [status, responseOf(schema)]))
}

function parametersOf (where: 'query' | 'header' | 'path', schema: TSchema | undefined): JsonObject[] {
  if (schema === undefined) return []
  const required = new Set<string>((schema.required as string[] | undefined) ?? [])
  return Object.entries(schema.properties as Record<string, TSchema>).map(([name, property]) => {
    const { description, ...rest } = property as TSchema & { description?: string }
    return { name, in: where, required: where === 'path' || required.has(name), ...(description === undefined ? {} : { description }), schema: rest }
  })
}

function libraryOperation (operation: LibraryOperation): Operation {
  const parameters = [...parametersOf('query', operation.querystring), ...parametersOf('header', operation.headers)]
  return {
    tags: ['session library'],
    description: operation.description,
    security: operation.security,
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(operation.body === undefined ? {} : { requestBody: { required: true, content: { 'application/json': { schema: operation.body } } } }),
    responses: responsesOf(operation.responses)
  }
}

const syncDown = { 503: errorResponse('SYNC_UNAVAILABLE: the Sync service is not answering; try again after Retry-After') }
const syncRefusal = (description: string) => ({ ...SyncErrorBodySchema, description })
const tooLarge = { 413: errorResponse('The body is larger than the backend takes') }

/** The Sync service's public callbacks, as its routes (sync/routes/oauth, webhooks, maintenance) answer them through the proxy. */
function proxiedSyncPaths (): Record<string, Record<string, Operation>> {
  return {
    '/sync/oauth/{provider}/callback': {
      get: {
        tags: ['sync callbacks'],
        description: 'Where a provider sends the browser after its consent screen: finishes the connect and redirects (302) to ' +
          'sync.postConnectRedirectUrl with `status` (connected, denied, expired, mismatch or error), `provider`, `intent` and `cid`. ' +
          'The signed, single-use `state` ties it to the user who began.',
        security: SECURITY.none,
        parameters: [...parametersOf('path', Type.Object({ provider: ProviderSchema })), ...parametersOf('query', OAuthCallbackQuerySchema)],
        responses: {
          302: {
            description: 'The browser goes to the Location header',
            headers: { Location: { description: 'sync.postConnectRedirectUrl with `status`, `provider`, `intent` and `cid`', schema: { type: 'string' } } }
          },
          ...responsesOf({
            400: syncRefusal('VALIDATION: an unknown provider or an oversized parameter'),
            ...syncDown
          })
        }
      }
    },
    '/sync/webhooks/google': {
      post: {
        tags: ['sync callbacks'],
        description: 'Google Calendar push notification, verified by its channel token; the body is not read',
        security: SECURITY.none,
        parameters: parametersOf('header', GoogleWebhookHeadersSchema),
        responses: responsesOf({
          204: Type.Null({ description: 'Accepted' }),
          400: syncRefusal('VALIDATION: a required X-Goog-* header is missing'),
          401: syncRefusal('UNAUTHORIZED: the notification does not match its channel; nothing changed'),
          ...tooLarge,
          ...syncDown
        })
      }
    },
    '/sync/webhooks/microsoft': {
      post: {
        tags: ['sync callbacks'],
        description: 'Microsoft Graph notifications, each verified by its subscription\'s clientState: the validation handshake ' +
          '(`validationToken` echoed as text/plain), change and lifecycle notifications (JSON `{ value: [...] }`)',
        security: SECURITY.none,
        parameters: parametersOf('query', MicrosoftWebhookQuerySchema),
        requestBody: { required: false, content: { 'application/json': { schema: Type.Object({ value: Type.Array(Type.Object({}, { additionalProperties: true })) }) } } },
        responses: {
          200: responseOf(Type.String({ description: 'The validation token, echoed' }), 'text/plain'),
          ...responsesOf({
            202: Type.Null({ description: 'Notifications accepted (a forged item is ignored, not refused)' }),
            400: syncRefusal('VALIDATION: neither a validation handshake nor a notification list, or an oversized validationToken'),
            ...tooLarge,
            ...syncDown
          })
        }
      }
    },
    '/sync/maintenance': {
      post: {
        tags: ['sync callbacks'],
        description: 'Watch maintenance for an outside scheduler: renews notification channels expiring soon for active users and ' +
          'stops those of inactive users',
        security: [{ maintenanceIdToken: [] }],
        responses: responsesOf({
          200: MaintenanceResultSchema,
          400: syncRefusal('VALIDATION: a body that is not JSON'),
          401: syncRefusal('UNAUTHORIZED: no valid ID token of the trusted caller'),
          ...tooLarge,
          415: syncRefusal('VALIDATION: a body that is not JSON in UTF-8'),
          ...syncDown
        })
      }
    }
  }
}

export function additionalPaths (): Record<string, Record<string, Operation>> {
  const paths: Record<string, Record<string, Operation>> = proxiedSyncPaths()
  for (const operation of LIBRARY_OPERATIONS) {
    paths[operation.path] = { ...paths[operation.path], [operation.method]: libraryOperation(operation) }
  }
  return paths
}

export default fp(async function openapi (fastify) {
  await fastify.register(swagger, {
    openapi: {
      openapi: OPENAPI_VERSION,
      info: {
        title: 'Calendar backend',
        version: '1',
        description: 'Every operation lists each status it can answer. Errors are JSON: `{statusCode, code?, error, message}`, ' +
          'except the session library\'s (`{message}`, or 200 with a `status`). Any route but /api/health may answer 503 OVERLOADED.'
      },
      servers: [{ url: new URL(fastify.config.backend.apiUrl).origin }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'Access token of a native client (sign in with `sx-auth-mode: header`; the `sx-access-token` header)' },
          cookie: { type: 'apiKey', in: 'cookie', name: 'sAccessToken', description: 'Browser session cookie; state-changing calls also send the `rid` header' },
          refreshBearer: { type: 'http', scheme: 'bearer', description: 'Refresh token of a native client (the `sx-refresh-token` header), on refresh only' },
          refreshCookie: { type: 'apiKey', in: 'cookie', name: 'sRefreshToken', description: 'Browser refresh cookie, on refresh only' },
          serviceToken: { type: 'http', scheme: 'bearer', description: 'backend.serviceToken: the Sync service only' },
          maintenanceIdToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An ID token of the trusted scheduler whose audience is the maintenance URL' }
        }
      }
    },
    // The /sync proxy's catch-all routes are described by proxiedSyncPaths instead. A folder's
    // index route answers with and without the trailing slash; the document names the form clients use.
    transform: ({ schema, url }) => ({
      schema: url.startsWith('/sync/') || url === '/sync' ? { ...schema, hide: true } : schema,
      url: url.length > 1 ? url.replace(/\/$/, '') : url
    }),
    transformObject: (documentObject) => {
      const document = 'openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject
      return { ...document, paths: { ...document.paths, ...additionalPaths() } } as typeof document
    }
  })
}, { name: 'openapi', dependencies: ['config'] })

/** The document as it is committed (openapi.json): stable key order, two-space indent, final newline. */
export function documentText (app: { swagger: () => unknown }): string {
  return JSON.stringify(app.swagger(), null, 2) + '\n'
}
