import fp from 'fastify-plugin'

const HEALTH_PATH = '/api/health'
const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const

function levelsFrom (threshold: string): readonly string[] {
  const index = LEVELS.indexOf(threshold as typeof LEVELS[number])
  return index < 0 ? [] : LEVELS.slice(index)
}

// One line per request, written when the response is done. Health probes arrive every few
// seconds, so they are logged at debug only: visible when runtime.logLevel is debug, hidden otherwise.
export default fp(async function requestLogging (fastify) {
  // The level is fixed at start; deciding once keeps the per-request cost of a hidden line at zero.
  const logged = new Set(levelsFrom(fastify.log.level))
  fastify.addHook('onResponse', (request, reply, done) => {
    const isHealthProbe = request.url === HEALTH_PATH || request.url.startsWith(`${HEALTH_PATH}?`)
    const level = isHealthProbe ? 'debug' : 'info'
    if (logged.has(level)) request.log[level]({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed')
    done()
  })
}, { name: 'request-logging' })
