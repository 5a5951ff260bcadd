// The connect funnel's oauth_callback event reaches the analytics host (PostHog's capture API) when
// analytics.key and analytics.host are set; a stand-in of the host records what arrives.
import { gunzipSync } from 'node:zlib'
import Fastify from 'fastify'
import { test } from 'tap'
import { begin, consent, followCallback, startStack, ALICE } from './harness.js'
import { newUserId } from '../helper.js'

test('oauth_callback is sent to the analytics host', async (t) => {
  const received: Array<{ event: string, distinct_id?: string, properties: Record<string, unknown>, api_key?: string }> = []
  const host = Fastify()
  // The body as sent (PostHog may gzip it), whatever its content type says.
  host.removeAllContentTypeParsers()
  host.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => { done(null, body) })
  host.post('/*', async (request) => {
    const raw = request.body as Buffer
    const text = request.headers['content-encoding'] === 'gzip' ? gunzipSync(raw).toString() : raw.toString()
    const body = JSON.parse(text) as { batch?: typeof received, api_key?: string }
    for (const event of body.batch ?? []) received.push({ ...event, api_key: body.api_key })
    return { status: 1 }
  })
  await host.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => host.close())
  const stack = await startStack(t, { analytics: { key: 'phc_test_project_key', host: `http://127.0.0.1:${(host.server.address() as { port: number }).port}` } })

  const userId = newUserId()
  const started = await begin(stack, userId)
  const done = await followCallback(await consent(started.authorizationUrl, ALICE))
  t.equal(done.location.searchParams.get('status'), 'connected')
  await stack.sync.syncAnalytics.close()
  const event = received.find((item) => item.event === 'oauth_callback')
  t.ok(event, 'the event arrived')
  t.equal(event?.api_key, 'phc_test_project_key')
  t.match(event?.properties, { provider: 'google', outcome: 'connected', intent: 'connect', correlationId: started.correlationId })
  t.notOk(event?.properties.errorClass, 'errorClass only on error')
})
