import fp from 'fastify-plugin'

// Once the service begins to close, every answer closes its connection. Node's close ends the
// connections idle at that moment; one busy then (a slow read, a held read of the change feed)
// would otherwise idle on after its answer until the caller's keep-alive ran out, holding the
// close up past the shutdown grace.
export default fp(async function draining (fastify) {
  let closing = false
  fastify.addHook('preClose', async () => { closing = true })
  // A callback hook, which lets the answer go out in the same tick: an async one would delay every
  // answer by a turn, and the session library's middleware reads an answer sent in its own tick
  // as handled (a later one as not, which routes the request on to a 404).
  fastify.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close')
    done(null, payload)
  })
}, { name: 'draining' })
