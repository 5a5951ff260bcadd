// The internal port's probes and the connections around a shutdown: a load balancer stops sending traffic (readiness
// 503) as soon as the service begins to close, while the requests already taken still finish and
// liveness still answers, so nothing restarts a process that is only draining.
import { test } from 'tap'
import Fastify from 'fastify'
import metrics from '../../plugins/external/metrics.js'
import draining from '../../plugins/external/draining.js'

test('readiness answers 503 from the moment the service begins to close, while liveness and running requests go on', async (t) => {
  let databaseAnswers = true
  const app = Fastify({ logger: false })
  await app.register(draining)
  await app.register(metrics, { service: 'backend', image: 'latest', port: 0, ready: async () => databaseAnswers })
  let release: () => void = () => {}
  const released = new Promise<void>((resolve) => { release = resolve })
  let taken: () => void = () => {}
  const running = new Promise<void>((resolve) => { taken = resolve })
  app.get('/slow', async () => {
    taken()
    await released
    return { finished: true }
  })
  const address = await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(async () => { release(); await app.close() })
  const probe = async (path: string): Promise<number> => (await fetch(`http://127.0.0.1:${String(app.metricsPort)}${path}`)).status

  t.equal(await probe('/ready'), 200, 'ready once started with the database answering')
  databaseAnswers = false
  t.equal(await probe('/ready'), 503, 'not ready while the database does not answer')
  t.equal(await probe('/live'), 200, 'yet alive')
  databaseAnswers = true

  const slow = fetch(`${address}/slow`)
  await running
  const closing = app.close()
  t.equal(await probe('/ready'), 503, 'not ready once closing, with the database answering')
  t.equal(await probe('/live'), 200, 'still alive while it drains')
  release()
  const answer = await slow
  t.same(await answer.json(), { finished: true }, 'the request taken before the close finishes')
  t.equal(answer.headers.get('connection'), 'close', 'and its connection closes with the answer')
  const drained = performance.now()
  await closing
  t.ok(performance.now() - drained < 5000, `so the close does not wait for the caller's keep-alive to run out (${Math.round(performance.now() - drained)} ms)`)
  await t.rejects(fetch(`http://127.0.0.1:${String(app.metricsPort)}/live`), 'the internal port closes with the service')
})
