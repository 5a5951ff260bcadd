import fp from 'fastify-plugin'
import { REQUEST_ID_HEADER, withRequestId } from '../../lib/request-id.js'

// Each request runs as the work of its id (lib/request-id.ts), so the calls it makes carry the
// id on; the answer names it, for a person to quote and an operator to grep. The id itself is
// made by the server's genReqId (serverOptions), which also puts it on every log line.
export default fp(async function requestId (fastify) {
  fastify.addHook('onRequest', (request, _reply, done) => {
    withRequestId(request.id, done)
  })
  fastify.addHook('onSend', async (request, reply) => {
    reply.header(REQUEST_ID_HEADER, request.id)
  })
}, { name: 'request-id' })
