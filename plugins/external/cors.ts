import fp from 'fastify-plugin'
import cors from '@fastify/cors'

// Session headers of the specification (sx-*) and of SuperTokens' own frontend SDKs (st-*, rid,
// fdi-version, anti-csrf) must cross origins for the allowed origins only.
export const sessionRequestHeaders = ['content-type', 'authorization', 'sx-auth-mode', 'st-auth-mode', 'rid', 'fdi-version', 'anti-csrf']
// Retry-After too: the sign-in dialog tells the person how long a refusal lasts.
export const sessionResponseHeaders = ['sx-access-token', 'sx-refresh-token', 'st-access-token', 'st-refresh-token', 'front-token', 'anti-csrf', 'retry-after']

export default fp(async function corsPolicy (fastify) {
  const allowed = new Set(fastify.config.backend.originsAllowed.map((origin) => new URL(origin).origin))
  await fastify.register(cors, {
    origin: (origin, callback) => { callback(null, origin !== undefined && allowed.has(origin)) },
    credentials: true,
    allowedHeaders: sessionRequestHeaders,
    exposedHeaders: sessionResponseHeaders,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    maxAge: 600
  })
}, { name: 'cors', dependencies: ['config'] })
