// The connect funnel's oauth_callback event reaches the analytics host (PostHog's capture API) when
// analytics.key and analytics.host are set; a stand-in of the host records what arrives.
import { test } from 'tap'
import { begin, consent, followCallback, startStack, ALICE } from './harness.js'
import { newUserId } from '../helper.js'
import { startAnalyticsStandIn } from '../../../dev/analytics/index.js'

test('oauth_callback is sent to the analytics host', async (t) => {
  const host = await startAnalyticsStandIn()
  t.teardown(host.close)
  const stack = await startStack(t, { analytics: { key: 'phc_test_project_key', host: host.url } })

  const userId = newUserId()
  const started = await begin(stack, userId)
  const done = await followCallback(await consent(started.authorizationUrl, ALICE))
  t.equal(done.location.searchParams.get('status'), 'connected')
  await stack.sync.syncAnalytics.close()
  const event = host.events().find((item) => item.event === 'oauth_callback')
  t.ok(event, 'the event arrived')
  t.equal(event?.apiKey, 'phc_test_project_key')
  t.match(event?.properties, { provider: 'google', outcome: 'connected', intent: 'connect', correlationId: started.correlationId })
  t.notOk(event?.properties.errorClass, 'errorClass only on error')
})
