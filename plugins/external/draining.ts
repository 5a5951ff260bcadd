import fp from 'fastify-plugin'

// Once the service begins to close, every answer closes its connection. Node's close ends the
// connections idle at that moment; one busy then (a slow read, a held read of the change feed)
// would otherwise idle on after its answer until the caller's keep-alive ran out, holding the
// close up past the shutdown grace.
export default fp(async function draining (fastify) {
  let closing = false
  fastify.addHook('preClose', async () => { closing = true })
  fastify.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close')
  })
}, { name: 'draining' })
