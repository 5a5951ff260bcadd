// Graph's JSON batching as Microsoft documents it: up to 20 requests in one POST to /v1.0/$batch,
// each answered with its own status, headers and body as if it had been sent alone, in an order
// that is not the requests'; malformed batches refused whole; dependsOn and 424.
import { test } from 'tap'
import type { Test } from 'tap'
import type { MicrosoftStandIn } from '../../../dev/microsoft/index.js'
import { connect, control, defaultCalendarId, graph, startStandIn } from './harness.js'
import type { Json } from './harness.js'

const ALICE = 'alice@example.com'
const BERLIN = 'W. Europe Standard Time'
const WINDOW = 'startDateTime=2030-01-01T00:00:00Z&endDateTime=2030-12-31T00:00:00Z'
const HOUR = { start: { dateTime: '2030-05-02T09:00:00', timeZone: 'UTC' }, end: { dateTime: '2030-05-02T10:00:00', timeZone: 'UTC' } }
const JSON_HEADERS = { 'Content-Type': 'application/json' }

interface SubResponse {
  id: string
  status: number
  headers: Record<string, string>
  body?: Record<string, unknown>
}

interface Counts { operations: Record<string, { total: number, statuses: Record<string, number> }> }

async function setUp (t: Test): Promise<{ microsoft: MicrosoftStandIn, token: string, masterId: string }> {
  const microsoft = await startStandIn(t, { accounts: [{ email: ALICE, name: 'Alice Example', timeZone: BERLIN }] })
  const { tokens } = await connect(microsoft, ALICE)
  const master = await graph(microsoft, tokens.access_token, 'POST', '/me/events', {
    subject: 'Weekly sync',
    start: { dateTime: '2030-03-04T09:00:00', timeZone: BERLIN },
    end: { dateTime: '2030-03-04T09:30:00', timeZone: BERLIN },
    recurrence: { pattern: { type: 'weekly', interval: 1, daysOfWeek: ['monday'] }, range: { type: 'numbered', startDate: '2030-03-04', numberOfOccurrences: 5 } }
  })
  if (master.status !== 201) throw new Error(`series not created: ${JSON.stringify(master.body)}`)
  t.equal((await control(microsoft, 'DELETE', '/counters')).status, 204)
  return { microsoft, token: tokens.access_token, masterId: String(master.body['id']) }
}

async function batch (microsoft: MicrosoftStandIn, token: string, requests: unknown[]): Promise<Json> {
  return await graph(microsoft, token, 'POST', '/$batch', { requests })
}

const responsesOf = (answer: Json): SubResponse[] => answer.body['responses'] as SubResponse[]

function byId (answer: Json, id: string): SubResponse {
  const found = responsesOf(answer).find((response) => response.id === id)
  if (found === undefined) throw new Error(`no response with id ${id} in ${JSON.stringify(answer.body)}`)
  return found
}

const operations = async (microsoft: MicrosoftStandIn): Promise<Counts['operations']> => (await control<Counts>(microsoft, 'GET', '/counters')).body.operations

test('a series master and its instances in one batch: each answered as alone, Prefer honoured, in an order that is not the requests\'', async (t) => {
  const { microsoft, token, masterId } = await setUp(t)
  const answer = await batch(microsoft, token, [
    { id: 'master', method: 'GET', url: `/me/events/${masterId}` },
    { id: 'instances', method: 'GET', url: `me/events/${masterId}/instances?${WINDOW}`, headers: { Prefer: 'odata.maxpagesize=2' } },
    { id: 'me', method: 'get', url: '/me?$select=displayName' }
  ])
  t.equal(answer.status, 200)
  t.match(answer.headers.get('content-type'), /^application\/json/)
  t.match(answer.headers.get('request-id'), /^[0-9a-f-]{36}$/)
  t.same(Object.keys(answer.body), ['responses'])
  const ids = responsesOf(answer).map((response) => response.id)
  t.same([...ids].sort(), ['instances', 'master', 'me'], 'one response per request')
  t.notSame(ids, ['master', 'instances', 'me'], 'responses do not come in the requests\' order: match them by id')

  const master = byId(answer, 'master')
  t.equal(master.status, 200)
  t.match(master.headers, { 'Content-Type': /^application\/json/ })
  t.match(master.body, { id: masterId, type: 'seriesMaster', subject: 'Weekly sync', recurrence: { pattern: { type: 'weekly' } } })

  const instances = byId(answer, 'instances')
  t.equal(instances.status, 200)
  t.equal(instances.headers['Preference-Applied'], 'odata.maxpagesize=2', 'the request\'s own Prefer header is honoured')
  const value = instances.body?.['value'] as Array<Record<string, unknown>>
  t.same(value.map((instance) => [instance['type'], instance['seriesMasterId']]), [['occurrence', masterId], ['occurrence', masterId]])
  const nextLink = String(instances.body?.['@odata.nextLink'])
  t.match(nextLink, new RegExp(`^${microsoft.graphUrl.replace(/\./g, '\\.')}/me/events/[^/]+/instances\\?.*\\$skip=2`), 'an absolute nextLink a client follows directly')
  const rest = await graph(microsoft, token, 'GET', nextLink, undefined, { prefer: 'odata.maxpagesize=2' })
  t.equal((rest.body['value'] as unknown[]).length, 2)

  t.match(byId(answer, 'me'), { status: 200, body: { displayName: 'Alice Example' } })

  const counted = await operations(microsoft)
  t.same(counted['batch'], { total: 1, statuses: { 200: 1 } }, 'the batch counts as one call of its own')
  t.same(counted['event.get'], { total: 1, statuses: { 200: 1 } }, 'each request counts under its own operation')
  t.same(counted['event.instances'], { total: 2, statuses: { 200: 2 } })
  t.same(counted['user.get'], { total: 1, statuses: { 200: 1 } })
})

test('a batch Graph cannot take is refused whole with 400 and none of its requests runs', async (t) => {
  const { microsoft, token } = await setUp(t)
  const calendarId = await defaultCalendarId(microsoft, ALICE)
  const create = (id: string): Record<string, unknown> => ({ id, method: 'POST', url: '/me/events', headers: JSON_HEADERS, body: { subject: `Event ${id}`, ...HOUR } })

  const tooMany = await batch(microsoft, token, Array.from({ length: 21 }, (_, index) => create(String(index + 1))))
  t.equal(tooMany.status, 400)
  t.match(tooMany.body, { error: { code: 'BadRequest', message: 'Number of requests inside batch exceeds the limit.', innerError: { 'request-id': String, date: String } } })

  const refusals: Array<[string, unknown[], RegExp]> = [
    ['ids are compared without case', [create('a'), create('A')], /^Request Id A has to be unique in a batch$/],
    ['a request without a url', [create('1'), { id: '2', method: 'GET' }], /url/],
    ['a request without a method', [create('1'), { id: '2', url: '/me' }], /method/],
    ['a request without an id', [create('1'), { method: 'GET', url: '/me' }], /id/],
    ['a write with a body and no Content-Type', [create('1'), { id: '2', method: 'POST', url: '/me/events', body: { subject: 'x', ...HOUR } }], /^Write request with id '2' does not contain a Content-Type header\.$/],
    ['a write without a body', [create('1'), { id: '2', method: 'PATCH', url: '/me/events/x', headers: JSON_HEADERS }], /^Write request id : 2 does not contain Content-Type header or body\.$/]
  ]
  for (const [what, requests, message] of refusals) {
    const refused = await batch(microsoft, token, requests)
    t.match(refused, { status: 400, body: { error: { code: 'BadRequest', message } } }, what)
  }
  t.match(await graph(microsoft, token, 'POST', '/$batch', { value: [] }), { status: 400, body: { error: { code: 'BadRequest' } } }, 'no requests array')
  t.match(await graph(microsoft, token, 'POST', '/$batch', 'not json'), { status: 400, body: { error: { code: 'BadRequest' } } })

  t.same((await control<{ items: unknown[] }>(microsoft, 'GET', `/calendars/${calendarId}/events`)).body.items.length, 1, 'only the series of the set-up: nothing was created')
  const counted = await operations(microsoft)
  t.same(Object.keys(counted), ['batch'], 'no request of a refused batch reached a route')
  t.same(counted['batch'], { total: 9, statuses: { 400: 9 } })

  const twenty = await batch(microsoft, token, Array.from({ length: 20 }, (_, index) => create(String(index + 1))))
  t.equal(twenty.status, 200, 'twenty is the limit, not beyond it')
  t.same(responsesOf(twenty).map((response) => response.status), Array.from({ length: 20 }, () => 201))
})

test('each request keeps its own outcome: a 404, a 412 and a 403 beside a 200 and a 201, and the batch is 200', async (t) => {
  const { microsoft, token } = await setUp(t)
  const created = await graph(microsoft, token, 'POST', '/me/events', { subject: 'Planning', ...HOUR })
  const id = String(created.body['id'])
  await graph(microsoft, token, 'PATCH', `/me/events/${id}`, { subject: 'Planning (moved)' })
  const answer = await batch(microsoft, token, [
    { id: 'found', method: 'GET', url: `/me/events/${id}`, headers: { Prefer: `outlook.timezone="${BERLIN}"` } },
    { id: 'missing', method: 'GET', url: '/me/events/AAMkAAAAAAAAAAAAAAAAAAAAAAA=' },
    { id: 'stale', method: 'PATCH', url: `/me/events/${id}`, headers: { ...JSON_HEADERS, 'If-Match': String(created.body['@odata.etag']) }, body: { subject: 'Lost update' } },
    { id: 'created', method: 'POST', url: '/me/calendar/events', headers: { 'content-type': 'application/json' }, body: { subject: 'Review', ...HOUR } },
    { id: 'malformed', method: 'DELETE', url: '/me/events/not-an-id' },
    { id: 'nested', method: 'POST', url: '/$batch', headers: JSON_HEADERS, body: { requests: [{ id: '1', method: 'GET', url: '/me' }] } },
    { id: 'absolute', method: 'GET', url: `${microsoft.graphUrl}/me` },
    { id: 'outside', method: 'GET', url: '/../_control/accounts' }
  ])
  t.equal(answer.status, 200, 'a 200 on the batch says nothing of the requests in it')
  t.match(byId(answer, 'found'), {
    status: 200,
    headers: { 'Preference-Applied': `outlook.timezone="${BERLIN}"` },
    body: { subject: 'Planning (moved)', start: { dateTime: '2030-05-02T11:00:00.0000000', timeZone: BERLIN } }
  })
  t.match(byId(answer, 'missing'), {
    status: 404,
    headers: { 'Content-Type': /^application\/json/ },
    body: { error: { code: 'ErrorItemNotFound', message: 'The specified object was not found in the store.', innerError: { 'request-id': String } } }
  })
  t.match(byId(answer, 'stale'), { status: 412, body: { error: { code: 'ErrorIrresolvableConflict' } } })
  t.match(byId(answer, 'created'), { status: 201, body: { subject: 'Review', type: 'singleInstance', '@odata.etag': /^W\// } })
  t.match(byId(answer, 'malformed'), { status: 400, body: { error: { code: 'ErrorInvalidIdMalformed' } } })
  t.match(byId(answer, 'nested'), { status: 400, body: { error: { code: 'BadRequest' } } }, 'no batch inside a batch')
  t.match(byId(answer, 'absolute'), { status: 400, body: { error: { code: 'BadRequest' } } }, 'URLs are relative to the version')
  t.match(byId(answer, 'outside'), { status: 400, body: { error: { code: 'BadRequest' } } }, 'nothing outside Graph is reached')
  t.match(await graph(microsoft, token, 'GET', `/me/events/${id}`), { status: 200, body: { subject: 'Planning (moved)' } }, 'the stale write changed nothing')

  // Permissions are those of the batch's token, request by request.
  await control(microsoft, 'POST', '/accounts', { email: 'carol@example.com' })
  const carol = await connect(microsoft, 'carol@example.com', { scope: 'openid offline_access Calendars.Read' })
  const readOnly = await batch(microsoft, carol.tokens.access_token, [
    { id: 'read', method: 'GET', url: '/me/calendar/events' },
    { id: 'write', method: 'POST', url: '/me/calendar/events', headers: JSON_HEADERS, body: { subject: 'x', ...HOUR } },
    { id: 'me', method: 'GET', url: '/me' }
  ])
  t.equal(readOnly.status, 200)
  t.match(byId(readOnly, 'read'), { status: 200, body: { value: [] } })
  t.match(byId(readOnly, 'write'), { status: 403, body: { error: { code: 'ErrorAccessDenied' } } })
  t.match(byId(readOnly, 'me'), { status: 403 }, '/me needs User.Read, in a batch as alone')
})

test('an armed 429 hits the one request it matches, with Retry-After in that response\'s headers; one on the batch\'s path hits the batch', async (t) => {
  const { microsoft, token, masterId } = await setUp(t)
  const requests = [
    { id: '1', method: 'GET', url: `/me/events/${masterId}` },
    { id: '2', method: 'GET', url: `/me/events/${masterId}/instances?${WINDOW}` },
    { id: '3', method: 'GET', url: '/me/calendars' }
  ]
  t.equal((await control(microsoft, 'POST', '/faults', { pathPrefix: `/v1.0/me/events/${masterId}/instances`, method: 'GET', status: 429, retryAfterSec: 7 })).status, 201)
  const throttled = await batch(microsoft, token, requests)
  t.equal(throttled.status, 200)
  t.equal(throttled.headers.get('retry-after'), null, 'the batch itself is not throttled')
  const limited = byId(throttled, '2')
  t.equal(limited.status, 429)
  t.equal(limited.headers['Retry-After'], '7')
  t.match(limited.body, { error: { code: 'TooManyRequests', message: 'Please retry again later.' } })
  t.match(byId(throttled, '1'), { status: 200, body: { id: masterId } })
  t.match(byId(throttled, '3'), { status: 200, body: { value: Array } })
  t.same((await control(microsoft, 'GET', '/faults')).body, { faults: [] }, 'the fault was used up by the request it matched')

  const retried = await batch(microsoft, token, [requests[1]])
  t.match(responsesOf(retried), [{ id: '2', status: 200, body: { value: Array } }], 'the throttled request alone, retried, goes through')

  await control(microsoft, 'POST', '/faults', { pathPrefix: '/v1.0/$batch', status: 503, retryAfterSec: 3 })
  const whole = await batch(microsoft, token, requests)
  t.match(whole, { status: 503, body: { error: { code: 'serviceNotAvailable' } } })
  t.equal(whole.headers.get('retry-after'), '3')

  const counted = await operations(microsoft)
  t.same(counted['event.instances'], { total: 2, statuses: { 200: 1, 429: 1 } }, 'a faulted request counts under its own operation, as a direct call does')
  t.same(counted['event.get'], { total: 1, statuses: { 200: 1 } }, 'nothing of the faulted batch ran')
  t.same(counted['batch'], { total: 3, statuses: { 200: 2, 503: 1 } })
})

test('the batch needs a valid bearer token like every Graph call', async (t) => {
  const { microsoft, masterId } = await setUp(t)
  const body = JSON.stringify({ requests: [{ id: '1', method: 'GET', url: `/me/events/${masterId}` }] })
  const anonymous = await fetch(`${microsoft.graphUrl}/$batch`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  t.equal(anonymous.status, 401)
  t.match(anonymous.headers.get('www-authenticate'), /^Bearer realm="", authorization_uri=/)
  t.match(await anonymous.json(), { error: { code: 'InvalidAuthenticationToken', message: 'Access token is empty.' } })
  t.match(await graph(microsoft, 'EwB-forged', 'POST', '/$batch', JSON.parse(body)), { status: 401, body: { error: { code: 'InvalidAuthenticationToken' } } })
  const counted = await operations(microsoft)
  t.same(counted, { batch: { total: 2, statuses: { 401: 2 } } }, 'no request of the batch ran')
})

test('dependsOn: requests run in sequence, a failed one fails what depends on it with 424, and a batch half sequential is refused', async (t) => {
  const { microsoft, token, masterId } = await setUp(t)
  const sequential = await batch(microsoft, token, [
    { id: 'create', method: 'POST', url: '/me/events', headers: JSON_HEADERS, body: { subject: 'First', ...HOUR } },
    { id: 'list', dependsOn: ['create'], method: 'GET', url: '/me/events?$top=10' },
    { id: 'view', dependsOn: ['LIST'], method: 'GET', url: '/me/calendarView?startDateTime=2030-05-02T00:00:00Z&endDateTime=2030-05-03T00:00:00Z' }
  ])
  t.equal(sequential.status, 200)
  t.equal(byId(sequential, 'create').status, 201)
  t.same((byId(sequential, 'list').body?.['value'] as Array<{ subject: string }>).map((event) => event.subject).sort(), ['First', 'Weekly sync'], 'the list ran after the create')
  t.same((byId(sequential, 'view').body?.['value'] as Array<{ subject: string }>).map((event) => event.subject), ['First'])

  const broken = await batch(microsoft, token, [
    { id: '1', method: 'GET', url: `/me/events/${masterId}` },
    { id: '2', dependsOn: ['1'], method: 'GET', url: '/me/events/AAMkAAAAAAAAAAAAAAAAAAAAAAA=' },
    { id: '3', dependsOn: ['2'], method: 'POST', url: '/me/events', headers: JSON_HEADERS, body: { subject: 'Never', ...HOUR } },
    { id: '4', dependsOn: ['3'], method: 'GET', url: '/me' },
    { id: '5', dependsOn: ['1'], method: 'GET', url: '/me/calendar' }
  ])
  t.equal(broken.status, 200)
  t.same(Object.fromEntries(responsesOf(broken).map((response) => [response.id, response.status])), { 1: 200, 2: 404, 3: 424, 4: 424, 5: 200 },
    'what depends on a failed request fails with 424, and so on down the chain; what depends on a good one runs')
  t.match(byId(broken, '3'), { headers: { 'Content-Type': /^application\/json/ }, body: { error: { code: String, message: String } } })
  const subjects = (await graph(microsoft, token, 'GET', '/me/events')).body['value'] as Array<{ subject: string }>
  t.notOk(subjects.some((event) => event.subject === 'Never'), 'a request answered 424 did not run')

  t.match(await batch(microsoft, token, [
    { id: '1', method: 'GET', url: '/me' },
    { id: '2', dependsOn: ['1'], method: 'GET', url: '/me' },
    { id: '3', method: 'GET', url: '/me' }
  ]), { status: 400, body: { error: { code: 'BadRequest', message: 'Batch should be either fully sequential or fully parallel.' } } })
  t.match(await batch(microsoft, token, [
    { id: '1', dependsOn: ['2'], method: 'GET', url: '/me' },
    { id: '2', dependsOn: ['1'], method: 'GET', url: '/me' }
  ]), { status: 400, body: { error: { code: 'BadRequest', message: /^Invalid dependency for request Id 1/ } } }, 'a dependency names an earlier request')
  t.match(await batch(microsoft, token, [
    { id: '1', method: 'GET', url: '/me' },
    { id: '2', dependsOn: ['9'], method: 'GET', url: '/me' }
  ]), { status: 400, body: { error: { code: 'BadRequest', message: /^Invalid dependency for request Id 2/ } } })
})

test('a read-only calendar (canEdit false) refuses its writes inside a batch as alone: 403 ErrorAccessDenied each, the reads beside them answered, nothing stored', async (t) => {
  const { microsoft, token } = await setUp(t)
  const added = await control<{ id: string, canEdit: boolean }>(microsoft, 'POST', `/accounts/${ALICE}/calendars`, { name: 'Team', canEdit: false })
  t.match(added, { status: 201, body: { canEdit: false } })
  const team = added.body.id
  const planning = await control<Record<string, unknown>>(microsoft, 'POST', `/calendars/${team}/events`, { subject: 'Planning', ...HOUR })
  const eventId = String(planning.body['id'])
  const answer = await batch(microsoft, token, [
    { id: 'calendar', method: 'GET', url: `/me/calendars/${team}` },
    { id: 'create', method: 'POST', url: `/me/calendars/${team}/events`, headers: JSON_HEADERS, body: { subject: 'Mine', ...HOUR } },
    { id: 'update', method: 'PATCH', url: `/me/events/${eventId}`, headers: JSON_HEADERS, body: { subject: 'Renamed' } },
    { id: 'delete', method: 'DELETE', url: `/me/calendars/${team}/events/${eventId}` },
    { id: 'read', method: 'GET', url: `/me/events/${eventId}` },
    { id: 'elsewhere', method: 'POST', url: '/me/events', headers: JSON_HEADERS, body: { subject: 'Mine', ...HOUR } }
  ])
  t.equal(answer.status, 200)
  t.match(byId(answer, 'calendar'), { status: 200, body: { name: 'Team', canEdit: false, canShare: false } })
  for (const id of ['create', 'update', 'delete']) {
    t.match(byId(answer, id), {
      status: 403,
      headers: { 'Content-Type': /^application\/json/ },
      body: { error: { code: 'ErrorAccessDenied', message: 'Access is denied. Check credentials and try again.', innerError: { 'request-id': String } } }
    }, id)
  }
  t.match(byId(answer, 'read'), { status: 200, body: { subject: 'Planning', changeKey: planning.body['changeKey'] } })
  t.equal(byId(answer, 'elsewhere').status, 201, 'a writable calendar beside it takes its write')

  const stored = (await control<{ items: Array<Record<string, unknown>> }>(microsoft, 'GET', `/calendars/${team}/events`)).body.items
  t.match(stored, [{ id: eventId, subject: 'Planning', deleted: false, lastModifiedBy: 'control' }])
  t.equal(stored.length, 1, 'nothing added, nothing changed')
  const counted = await operations(microsoft)
  t.same([counted['event.create'], counted['event.update'], counted['event.delete']], [
    { total: 2, statuses: { 201: 1, 403: 1 } }, { total: 1, statuses: { 403: 1 } }, { total: 1, statuses: { 403: 1 } }
  ], 'each refusal counts under its own operation')
})
