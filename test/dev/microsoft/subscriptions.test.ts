// Change-notification subscriptions as Graph's webhook guides describe them: the validation
// handshake before a subscription exists, notifications with clientState, renewal by PATCH,
// deletion, expiry, lifecycle notifications, and deliveries that fail without harming anything.
import { test } from 'tap'
import { connect, control, defaultCalendarId, graph, startReceiver, startStandIn, testClock } from './harness.js'
import type { Receiver } from './harness.js'

const ALICE = 'alice@example.com'
const HOUR = { start: { dateTime: '2030-05-02T09:00:00', timeZone: 'UTC' }, end: { dateTime: '2030-05-02T10:00:00', timeZone: 'UTC' } }

const inMinutes = (minutes: number, now = Date.now()): string => new Date(now + minutes * 60_000).toISOString()
const lifecycleUrl = (receiver: Receiver): string => receiver.url.replace('/notifications', '/lifecycle')

function subscriptionBody (receiver: Receiver, calendarId: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    changeType: 'created,updated,deleted',
    notificationUrl: receiver.url,
    lifecycleNotificationUrl: lifecycleUrl(receiver),
    resource: `me/calendars/${calendarId}/events`,
    expirationDateTime: inMinutes(4000),
    clientState: 'secret-client-state-1',
    ...extra
  }
}

test('the validation handshake: the token echoed as text/plain with 200 in time, else no subscription', async (t) => {
  const microsoft = await startStandIn(t, { validationTimeoutMs: 300, accounts: [{ email: ALICE }] })
  const receiver = await startReceiver(t)
  const calendarId = await defaultCalendarId(microsoft, ALICE)
  const { tokens } = await connect(microsoft, ALICE)
  const subscribe = async (extra: Record<string, unknown> = {}): Promise<{ status: number, body: Record<string, unknown> }> =>
    await graph(microsoft, tokens.access_token, 'POST', '/subscriptions', subscriptionBody(receiver, calendarId, extra))

  const created = await subscribe()
  t.equal(created.status, 201)
  t.match(created.body, {
    '@odata.context': `${microsoft.url}/v1.0/$metadata#subscriptions/$entity`,
    id: /^[0-9a-f-]{36}$/,
    resource: `me/calendars/${calendarId}/events`,
    changeType: 'created,updated,deleted',
    clientState: 'secret-client-state-1',
    notificationUrl: receiver.url,
    lifecycleNotificationUrl: lifecycleUrl(receiver),
    expirationDateTime: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$/,
    applicationId: String,
    creatorId: String,
    includeResourceData: false,
    latestSupportedTlsVersion: 'v1_2'
  })
  t.same(receiver.validations.map((request) => request.path), ['/notifications', '/lifecycle'], 'both endpoints are validated')
  const [validation] = receiver.validations
  t.match(validation?.headers['content-type'], /^text\/plain; charset=utf-8$/)
  t.match(validation?.query.get('validationToken'), /^Validation: Testing client application reachability for subscription Request-Id: [0-9a-f-]{36}$/, 'the token, URL-decoded, has spaces and colons')
  t.same(receiver.notifications, [], 'no notification before a change')

  const before = (await control<{ subscriptions: unknown[] }>(microsoft, 'GET', '/subscriptions')).body.subscriptions.length
  receiver.validateWith('no-echo')
  t.match(await subscribe(), { status: 400, body: { error: { code: 'InvalidRequest', message: /^Subscription validation request failed\. Response must exactly match validationToken query parameter\./ } } })
  receiver.validateWith('html')
  t.match(await subscribe(), { status: 400, body: { error: { code: 'InvalidRequest', message: /content type of text\/plain/ } } })
  receiver.validateWith('slow')
  t.match(await subscribe(), { status: 400, body: { error: { code: 'InvalidRequest', message: /^Subscription validation request failed\. Notification endpoint must respond with 200 OK to validation request\. \(no answer within 300 ms\)$/ } } })
  receiver.validateWith('echo')
  t.match(await subscribe({ notificationUrl: 'http://127.0.0.1:9/nobody' }), { status: 400, body: { error: { message: /Subscription validation request failed/ } } })
  t.match(await subscribe({ notificationUrl: 'http://example.com/hook' }), { status: 400, body: { error: { message: /HTTPS/ } } })
  t.match(await subscribe({ expirationDateTime: inMinutes(10_090) }), { status: 400, body: { error: { message: 'Subscription expiration can only be 10080 minutes in the future.' } } })
  t.match(await subscribe({ changeType: 'created,moved' }), { status: 400 })
  t.match(await subscribe({ resource: 'me/messages' }), { status: 400 })
  t.match(await subscribe({ resource: 'users/someone-else@example.com/events' }), { status: 403 })
  t.equal((await control<{ subscriptions: unknown[] }>(microsoft, 'GET', '/subscriptions')).body.subscriptions.length, before, 'a refused subscription does not exist')
  t.equal((await control<{ notifications: { validationsFailed: number } }>(microsoft, 'GET', '/counters')).body.notifications.validationsFailed, 4)
})

test('notifications carry clientState, the change and the item; changes elsewhere are not announced', async (t) => {
  const microsoft = await startStandIn(t, { accounts: [{ email: ALICE, calendars: [{ name: 'Work' }] }] })
  const receiver = await startReceiver(t)
  const deletes = await startReceiver(t)
  const calendarId = await defaultCalendarId(microsoft, ALICE)
  const account = (await control<{ id: string, tenantId: string, calendars: Array<{ id: string, name: string }> }>(microsoft, 'GET', `/accounts/${ALICE}`)).body
  const work = account.calendars.find((calendar) => calendar.name === 'Work')?.id ?? ''
  const { tokens } = await connect(microsoft, ALICE)
  const subscription = (await graph(microsoft, tokens.access_token, 'POST', '/subscriptions', subscriptionBody(receiver, calendarId, { resource: '/me/events' }))).body
  await graph(microsoft, tokens.access_token, 'POST', '/subscriptions', subscriptionBody(deletes, calendarId, { changeType: 'deleted', lifecycleNotificationUrl: undefined }))

  const inserted = (await control<{ id: string, changeKey: string }>(microsoft, 'POST', `/calendars/${calendarId}/events`, { subject: 'From the phone', ...HOUR })).body
  const [createdItem] = await receiver.waitForItems(1)
  t.same(createdItem, {
    subscriptionId: subscription['id'],
    subscriptionExpirationDateTime: subscription['expirationDateTime'],
    changeType: 'created',
    resource: `Users/${account.id}/Events/${inserted.id}`,
    resourceData: { '@odata.type': '#Microsoft.Graph.Event', '@odata.id': `Users/${account.id}/Events/${inserted.id}`, '@odata.etag': `W/"${inserted.changeKey}"`, id: inserted.id },
    clientState: 'secret-client-state-1',
    tenantId: account.tenantId
  })
  t.match(receiver.notifications[0]?.headers['content-type'], /^application\/json/)

  const patched = await graph(microsoft, tokens.access_token, 'PATCH', `/me/events/${inserted.id}`, { subject: 'Changed by the app' })
  await graph(microsoft, tokens.access_token, 'DELETE', `/me/events/${inserted.id}`)
  await control(microsoft, 'POST', `/calendars/${work}/events`, { subject: 'Elsewhere', ...HOUR })
  await microsoft.notificationsSettled()
  t.same(receiver.items().map((item) => item['changeType']), ['created', 'updated', 'deleted'], 'the application\'s own writes too; the other calendar not')
  t.match(receiver.items()[1], { resourceData: { '@odata.etag': patched.body['@odata.etag'] } })
  t.same(deletes.items().map((item) => item['changeType']), ['deleted'], 'only the change types asked for')

  // A bulk seed arrives in batches of at most 100 notifications per POST.
  await control(microsoft, 'POST', `/calendars/${calendarId}/seed`, { generate: { singles: 250 } })
  await microsoft.notificationsSettled()
  const posts = receiver.notifications.slice(3).map((request) => (JSON.parse(request.body) as { value: unknown[] }).value.length)
  t.same(posts.reduce((sum, size) => sum + size, 0), 250)
  t.ok(posts.every((size) => size <= 100), `batches: ${posts.join(', ')}`)
})

test('renew by PATCH, reauthorize, delete, and expiry', async (t) => {
  const clock = testClock()
  const microsoft = await startStandIn(t, { clock: clock.now, accounts: [{ email: ALICE }] })
  const receiver = await startReceiver(t)
  const calendarId = await defaultCalendarId(microsoft, ALICE)
  const { tokens } = await connect(microsoft, ALICE)
  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number, body: Record<string, unknown> }> => await graph(microsoft, tokens.access_token, method, path, body)
  const first = (await call('POST', '/subscriptions', subscriptionBody(receiver, calendarId, { expirationDateTime: inMinutes(60, clock.now()) }))).body
  const second = (await call('POST', '/subscriptions', subscriptionBody(receiver, calendarId, { expirationDateTime: inMinutes(60, clock.now()) }))).body
  const id = String(first['id'])

  const renewedUntil = inMinutes(10_000, clock.now())
  const renewed = await call('PATCH', `/subscriptions/${id}`, { expirationDateTime: renewedUntil })
  t.equal(renewed.status, 200)
  t.equal(renewed.body['expirationDateTime'], renewedUntil.replace(/\.(\d{3})Z$/, '.$10000Z'))
  t.match(await call('PATCH', `/subscriptions/${id}`, { clientState: 'other' }), { status: 400 })
  t.match(await call('PATCH', `/subscriptions/${id}`, { expirationDateTime: inMinutes(20_000, clock.now()) }), { status: 400 })
  t.equal((await call('POST', `/subscriptions/${id}/reauthorize`)).status, 204)
  const listed = (await call('GET', '/subscriptions')).body['value'] as Array<{ id: string }>
  t.same(listed.map((entry) => entry.id).sort(), [id, String(second['id'])].sort(), 'the application\'s subscriptions for the user')

  t.equal((await call('DELETE', `/subscriptions/${String(second['id'])}`)).status, 204)
  t.match(await call('GET', `/subscriptions/${String(second['id'])}`), { status: 404, body: { error: { code: 'ResourceNotFound' } } })
  await control(microsoft, 'POST', `/calendars/${calendarId}/events`, { subject: 'One', ...HOUR })
  await microsoft.notificationsSettled()
  t.same(receiver.items().map((item) => item['subscriptionId']), [id], 'the deleted subscription gets nothing')

  clock.advance(10_001 * 60_000)
  t.equal((await control(microsoft, 'POST', `/accounts/${ALICE}/expire-access-tokens`)).status, 200)
  const { tokens: fresh } = await connect(microsoft, ALICE)
  await control(microsoft, 'POST', `/calendars/${calendarId}/events`, { subject: 'Two', ...HOUR })
  await microsoft.notificationsSettled()
  t.equal(receiver.items().length, 1, 'an expired subscription gets nothing')
  t.match(await graph(microsoft, fresh.access_token, 'GET', `/subscriptions/${id}`), { status: 404 }, 'and is gone')
  t.match((await control<{ subscriptions: Array<{ id: string, state: string }> }>(microsoft, 'GET', '/subscriptions')).body.subscriptions, [{ id, state: 'expired' }, { state: 'deleted' }])
})

test('lifecycle notifications: reauthorizationRequired, subscriptionRemoved, missed; a revoked grant pauses notifications', async (t) => {
  const microsoft = await startStandIn(t, { accounts: [{ email: ALICE }], notificationRetries: 2, notificationRetryDelayMs: 10 })
  const receiver = await startReceiver(t)
  const lifecycle = await startReceiver(t)
  const calendarId = await defaultCalendarId(microsoft, ALICE)
  const { tokens } = await connect(microsoft, ALICE)
  const body = (): Record<string, unknown> => subscriptionBody(receiver, calendarId, { lifecycleNotificationUrl: lifecycle.url })
  const subscription = (await graph(microsoft, tokens.access_token, 'POST', '/subscriptions', body())).body
  const id = String(subscription['id'])
  const lifecycleItems = (): Array<Record<string, unknown>> => lifecycle.items()

  t.match((await control(microsoft, 'POST', `/subscriptions/${id}/lifecycle`, { lifecycleEvent: 'reauthorizationRequired' })).body, { id, reauthorizationRequired: true })
  await microsoft.notificationsSettled()
  t.same(lifecycleItems(), [{
    subscriptionId: id,
    subscriptionExpirationDateTime: subscription['expirationDateTime'],
    tenantId: String(lifecycleItems()[0]?.['tenantId']),
    clientState: 'secret-client-state-1',
    lifecycleEvent: 'reauthorizationRequired'
  }])
  t.equal((await graph(microsoft, tokens.access_token, 'POST', `/subscriptions/${id}/reauthorize`)).status, 204)
  t.match((await control<{ subscriptions: Array<{ reauthorizationRequired: boolean }> }>(microsoft, 'GET', '/subscriptions')).body.subscriptions, [{ reauthorizationRequired: false }])

  // Deliveries that fail are retried, then given up and announced as missed; the stand-in carries on.
  receiver.respondWith(500)
  await control(microsoft, 'POST', `/calendars/${calendarId}/events`, { subject: 'Lost', ...HOUR })
  await microsoft.notificationsSettled()
  receiver.respondWith(202)
  t.equal(receiver.notifications.length, 3, 'one attempt and two retries')
  await microsoft.notificationsSettled()
  t.same(lifecycleItems().map((item) => item['lifecycleEvent']), ['reauthorizationRequired', 'missed'])
  t.equal((await graph(microsoft, tokens.access_token, 'GET', '/me/calendar')).status, 200, 'still serving')
  t.match((await control<{ notifications: Record<string, number> }>(microsoft, 'GET', '/counters')).body.notifications, { failed: 1, lifecycle: 2 })

  // Revoking the grant asks for reauthorization and pauses change notifications.
  t.same((await control(microsoft, 'POST', `/accounts/${ALICE}/revoke`, { reason: 'consent' })).body, { revoked: 1, subscriptions: 1 })
  await control(microsoft, 'POST', `/calendars/${calendarId}/events`, { subject: 'Paused', ...HOUR })
  await microsoft.notificationsSettled()
  t.same(lifecycleItems().map((item) => item['lifecycleEvent']), ['reauthorizationRequired', 'missed', 'reauthorizationRequired'])
  t.equal(receiver.notifications.length, 3, 'no change notification while the grant is gone')
  t.match(await graph(microsoft, tokens.access_token, 'POST', `/subscriptions/${id}/reauthorize`), { status: 403 }, 'reauthorizing needs a grant')
  t.match(await graph(microsoft, tokens.access_token, 'POST', '/subscriptions', body()), { status: 403 })

  // subscriptionRemoved ends the subscription.
  const again = await connect(microsoft, ALICE)
  const next = String((await graph(microsoft, again.tokens.access_token, 'POST', '/subscriptions', body())).body['id'])
  await control(microsoft, 'POST', `/subscriptions/${next}/lifecycle`, { lifecycleEvent: 'subscriptionRemoved' })
  await microsoft.notificationsSettled()
  t.equal(lifecycleItems().at(-1)?.['lifecycleEvent'], 'subscriptionRemoved')
  t.match(await graph(microsoft, again.tokens.access_token, 'GET', `/subscriptions/${next}`), { status: 404 })
  t.equal((await control(microsoft, 'POST', `/subscriptions/${next}/lifecycle`, { lifecycleEvent: 'missed' })).status, 404)
})
