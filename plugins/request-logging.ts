import fp from 'fastify-plugin'

const HEALTH_PATH = '/api/health'

// One line per request, written when the response is done. Health probes arrive every few
// seconds, so they are logged at debug only: visible when runtime.logLevel is debug, hidden otherwise.
export default fp(async function requestLogging (fastify) {
  fastify.addHook('onResponse', async (request, reply) => {
    const isHealthProbe = request.url === HEALTH_PATH || request.url.startsWith(`${HEALTH_PATH}?`)
    const line = { req: request, res: reply, responseTime: reply.elapsedTime }
    if (isHealthProbe) request.log.debug(line, 'request completed')
    else request.log.info(line, 'request completed')
  })
}, { name: 'request-logging' })
