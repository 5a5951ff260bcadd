import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'

// The OpenAPI document is generated from the routes' TypeBox schemas (`app.swagger()`, printed by
// `npm run openapi`). It is not served: /api/health stays the only unauthenticated route.
export default fp(async function openapi (fastify) {
  await fastify.register(swagger, {
    openapi: {
      info: { title: 'Calendar backend', version: '1' },
      servers: [{ url: new URL(fastify.config.backend.apiUrl).origin }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'Access token of a native client (sx-auth-mode: header)' },
          cookie: { type: 'apiKey', in: 'cookie', name: 'sAccessToken', description: 'Browser session cookie' }
        }
      }
    },
    // A folder's index route answers with and without the trailing slash; the document names the
    // form clients use.
    transform: ({ schema, url }) => ({ schema, url: url.length > 1 ? url.replace(/\/$/, '') : url })
  })
}, { name: 'openapi', dependencies: ['config'] })
