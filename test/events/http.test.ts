import { waitUntil } from '../processes.js'
import { test, type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { LightMyRequestResponse } from 'fastify'
import { buildApp, signUp, startDependencies, uniqueEmail } from '../helper.js'
import { startSyncService } from './sync-service.js'

const BASE = {
  title: 'Dentist',
  startDate: '2026-03-02T09:00:00+01:00',
  endDate: '2026-03-02T10:00:00+01:00',
  timeZone: 'Europe/Berlin'
}

function id (): string {
  return randomBytes(12).toString('hex')
}

function assertEmpty204 (t: Test, response: LightMyRequestResponse, what: string): void {
  t.equal(response.statusCode, 204, `${what}: ${response.body}`)
  t.equal(response.body, '', `${what}: no body`)
  t.notOk(response.headers['content-type'], `${what}: no content type`)
  t.notOk(Number(response.headers['content-length'] ?? 0), `${what}: no content`)
}

// One backend app for the whole file: the session library keeps one configuration per process.
test('event routes over HTTP with real sessions and the Sync service', async (t) => {
  const deps = await startDependencies(t, { replicaSet: true })
  const sync = await startSyncService(t, deps.databaseUri(`sync_${randomBytes(4).toString('hex')}`))
  const { app, log } = await buildApp(t, deps, { syncUrl: sync.url, internalAuthToken: sync.internalAuthToken })
  const events = app.mongo.db.collection<{ _id: string, eventId: string, user: string, title: string }>('events')
  const ada = await signUp(app, { email: uniqueEmail('ada'), password: 'correct horse 1', name: 'Ada' })
  const bob = await signUp(app, { email: uniqueEmail('bob'), password: 'correct horse 2', name: 'Bob' })

  // Every named publish operation of the stream broker goes through `publish`, so this sees all.
  const published: string[] = []
  const publish = app.sse.publish.bind(app.sse)
  app.sse.publish = (userId, message) => {
    published.push(`${userId}:${message.type}`)
    return publish(userId, message)
  }
  app.sse.publishCalendarsChanged(bob.userId, { reasons: ['calendar'], refetchAll: false })
  t.same(published, [`${bob.userId}:calendarsChanged`], 'the recorder sees what the broker publishes')
  published.length = 0

  const as = (who: { headers: Record<string, string> }) => ({
    post: async (payload: unknown) => await app.inject({
      method: 'POST', url: '/api/event', headers: { ...who.headers, 'content-type': 'application/json' }, payload: JSON.stringify(payload)
    }),
    put: async (eventId: string, payload: unknown) => await app.inject({ method: 'PUT', url: `/api/event/${eventId}`, headers: who.headers, payload: payload as object }),
    delete: async (eventId: string, applyTo?: string) => await app.inject({
      method: 'DELETE', url: `/api/event/${eventId}${applyTo === undefined ? '' : `?applyTo=${applyTo}`}`, headers: who.headers
    }),
    get: async (eventId: string) => await app.inject({ method: 'GET', url: `/api/event/${eventId}`, headers: who.headers }),
    range: async (start: string, end: string) => await app.inject({
      method: 'GET', url: `/api/event?start=${encodeURIComponent(start)}&end=${encodeURIComponent(end)}`, headers: who.headers
    })
  })
  const asAda = as(ada)
  const asBob = as(bob)

  await t.test('every route needs a session', async (t) => {
    const before = await events.countDocuments()
    const eventId = id()
    for (const [method, url, payload] of [
      ['POST', '/api/event', { ...BASE, _id: eventId }],
      ['PUT', `/api/event/${eventId}`, BASE],
      ['DELETE', `/api/event/${eventId}`, undefined],
      ['GET', `/api/event/${eventId}`, undefined],
      ['GET', '/api/event?start=2026-03-01T00:00:00Z&end=2026-04-01T00:00:00Z', undefined]
    ] as const) {
      const response = await app.inject({ method, url, ...(payload === undefined ? {} : { payload }) })
      t.equal(response.statusCode, 401, `${method} ${url}`)
    }
    t.equal(await events.countDocuments(), before, 'nothing stored')
  })

  await t.test('create one: a true empty 204, then the stored event', async (t) => {
    const eventId = id()
    const response = await asAda.post({ ...BASE, _id: `optimistic-${eventId}`, user: bob.userId, lastUpdated: '2000-01-01T00:00:00Z', description: 'bring the card' })
    assertEmpty204(t, response, 'POST')
    const read = await asAda.get(eventId)
    t.equal(read.statusCode, 200)
    const event = read.json()
    t.match(event, {
      _id: eventId,
      user: ada.userId,
      title: 'Dentist',
      description: 'bring the card',
      startDate: BASE.startDate,
      endDate: BASE.endDate,
      isAllDay: false,
      timeZone: 'Europe/Berlin',
      status: 'confirmed',
      origin: 'compass',
      priority: 'unassigned'
    })
    t.not(event.lastUpdated, '2000-01-01T00:00:00Z', 'lastUpdated is the server\'s')
    t.ok(Date.now() - Date.parse(event.lastUpdated) < 60_000)
    t.equal((await events.findOne({ eventId }))?.user, ada.userId, 'stored under the session user, not the body\'s')

    const minted = await asAda.post({ ...BASE, title: 'no id' })
    assertEmpty204(t, minted, 'POST without id')
    t.equal(await events.countDocuments({ user: ada.userId, title: 'no id', eventId: { $regex: /^[0-9a-f]{24}$/ } }), 1, 'the server minted an id')
  })

  await t.test('create many: an array is all-or-nothing', async (t) => {
    const [first, second] = [id(), id()]
    assertEmpty204(t, await asAda.post([{ ...BASE, _id: first, title: 'one' }, { ...BASE, _id: second, title: 'two' }]), 'array')
    t.equal((await asAda.get(first)).json().title, 'one')
    t.equal((await asAda.get(second)).json().title, 'two')

    const before = await events.countDocuments()
    const [third, fourth] = [id(), id()]
    const invalid = await asAda.post([{ ...BASE, _id: third }, { ...BASE, _id: fourth, endDate: '2026-03-02T08:00:00+01:00' }])
    t.equal(invalid.statusCode, 400)
    t.match(invalid.json(), { code: 'EVENT_INVALID', message: 'body/1/endDate must be after startDate' })
    const twice = await asAda.post([{ ...BASE, _id: third }, { ...BASE, _id: `optimistic-${third}` }])
    t.equal(twice.statusCode, 400)
    t.match(twice.json().message, 'body/1/_id appears twice in one request')

    t.equal(await events.countDocuments(), before, 'nothing of a refused array was stored')
    t.equal(await events.countDocuments({ eventId: { $in: [third, fourth] } }), 0)
  })

  await t.test('ids are each user\'s own: another user\'s id is answered as a fresh one and both events stand', async (t) => {
    const bobsId = id()
    assertEmpty204(t, await asBob.post({ ...BASE, _id: bobsId, title: 'bob\'s' }), 'bob creates')
    const bobsStored = await events.findOne({ user: bob.userId, eventId: bobsId })
    const theirs = await asAda.post([{ ...BASE, _id: bobsId, title: 'ada\'s' }])
    const fresh = await asAda.post([{ ...BASE, _id: id(), title: 'ada\'s' }])
    t.equal(theirs.statusCode, 204, 'no answer tells ada that bob holds the id')
    t.same([theirs.statusCode, theirs.headers['content-type'], theirs.body], [fresh.statusCode, fresh.headers['content-type'], fresh.body], 'the same answer as a fresh id')
    t.equal((await asAda.get(bobsId)).json().title, 'ada\'s', 'ada reads her event')
    t.equal((await asBob.get(bobsId)).json().title, 'bob\'s', 'bob reads his')
    t.same(await events.findOne({ user: bob.userId, eventId: bobsId }), bobsStored, 'bob\'s event is unchanged')
    assertEmpty204(t, await asAda.delete(bobsId), 'ada deletes hers')
    t.equal((await asBob.get(bobsId)).json().title, 'bob\'s', 'bob\'s stays')
  })

  await t.test('each invalid shape is a 400 with the schema\'s message and stores nothing', async (t) => {
    const cases: Array<[unknown, RegExp]> = [
      // A body is not coerced: a string is neither shape, rather than an array of one string.
      ['not an event', /body must be an event change or an array of them/],
      [[], /body must NOT have fewer than 1 items/],
      [{ ...BASE, title: 'x'.repeat(1025) }, /body\/title must NOT have more than 1024 characters/],
      [{ ...BASE, startDate: 'tomorrow' }, /body\/startDate must match pattern/],
      [{ title: 'no dates' }, /body must have required property 'startDate'/],
      [{ ...BASE, colour: 'red' }, /body must NOT have additional properties/],
      [{ ...BASE, _id: 'xyz' }, /body\/_id must match pattern/],
      [{ ...BASE, priority: 'urgent' }, /body\/priority must be equal to one of the allowed values|body\/priority must be equal to constant/],
      [{ ...BASE, endDate: BASE.startDate }, /body\/endDate must be after startDate/],
      [{ ...BASE, isAllDay: true }, /body\/startDate must be a YYYY-MM-DD date/],
      [{ ...BASE, timeZone: 'Moon/Base' }, /body\/timeZone must be an IANA time zone/],
      [{ ...BASE, recurrence: { rule: ['RRULE:FREQ=SOMETIMES'] } }, /body\/recurrence\/rule is not a valid rule/],
      [{ ...BASE, recurrence: { rule: Array.from({ length: 21 }, () => 'EXDATE:20260101T000000Z') } }, /body\/recurrence\/rule must NOT have more than 20 items/],
      [{ ...BASE, recurrence: { eventId: id() }, originalStartDate: BASE.startDate }, /body\/recurrence\/eventId must name one of your recurring series/],
      [[{ ...BASE }, { ...BASE, description: { text: 'x' } }], /body\/1\/description must be string/]
    ]
    const before = await events.countDocuments()
    for (const [payload, message] of cases) {
      const response = await asAda.post(payload)
      t.equal(response.statusCode, 400, JSON.stringify(payload).slice(0, 80))
      t.match(response.json().message, message, JSON.stringify(payload).slice(0, 80))
    }
    const put = await asAda.put(id(), { ...BASE, endDate: '2026-03-01T00:00:00Z' })
    t.equal(put.statusCode, 400, 'PUT validates before it looks the event up')
    const range = await asAda.range('2026-03-02T00:00:00Z', '2026-03-01T00:00:00Z')
    t.equal(range.statusCode, 400)
    t.equal(range.json().message, 'querystring/end must be after start')
    t.equal((await asAda.range('2026-01-01T00:00:00Z', '2027-06-01T00:00:00Z')).statusCode, 400, 'range is bounded')
    t.equal(await events.countDocuments(), before, 'nothing stored')
  })

  await t.test('update and delete', async (t) => {
    const eventId = id()
    assertEmpty204(t, await asAda.post({ ...BASE, _id: eventId }), 'create')
    const created = (await asAda.get(eventId)).json()
    await sleep(5)
    assertEmpty204(t, await asAda.put(eventId, { ...BASE, title: 'Dentist (moved)', startDate: '2026-03-03T09:00:00+01:00', endDate: '2026-03-03T10:00:00+01:00' }), 'PUT')
    const updated = (await asAda.get(eventId)).json()
    t.equal(updated.title, 'Dentist (moved)')
    t.equal(updated.startDate, '2026-03-03T09:00:00+01:00')
    t.ok(Date.parse(updated.lastUpdated) > Date.parse(created.lastUpdated), 'every change updates lastUpdated')
    t.equal((await asAda.put(eventId, { ...BASE, _id: id() })).statusCode, 400, 'body id must match the path')
    const series = id()
    assertEmpty204(t, await asAda.post({ ...BASE, _id: series, recurrence: { rule: ['RRULE:FREQ=DAILY;COUNT=2'] } }), 'a series')
    const intoOccurrence = await asAda.put(eventId, { ...BASE, recurrence: { eventId: series }, originalStartDate: BASE.startDate })
    t.equal(intoOccurrence.statusCode, 400)
    t.same(intoOccurrence.json(), {
      statusCode: 400,
      code: 'EVENT_CHANGE_NOT_ALLOWED',
      error: 'Bad Request',
      message: 'This change is not allowed: a single event cannot become an occurrence of a series'
    })
    t.equal((await asAda.get(eventId)).json().title, 'Dentist (moved)', 'unchanged')

    assertEmpty204(t, await asAda.delete(eventId), 'DELETE')
    t.equal((await asAda.get(eventId)).statusCode, 404)
    t.equal(await events.countDocuments({ eventId }), 0)
    t.equal((await asAda.delete(eventId)).statusCode, 404, 'a second delete finds nothing')
    t.equal((await asAda.put(eventId, BASE)).statusCode, 404, 'PUT does not create')
  })

  await t.test('another user\'s event behaves exactly like a missing one', async (t) => {
    const bobsId = id()
    assertEmpty204(t, await asBob.post({ ...BASE, _id: bobsId, title: 'Bob only' }), 'bob creates')
    const stored = await events.findOne({ eventId: bobsId })
    const missing = id()
    for (const [name, call] of [
      ['GET', (eventId: string) => asAda.get(eventId)],
      ['PUT', (eventId: string) => asAda.put(eventId, { ...BASE, title: 'taken over' })],
      ['DELETE', (eventId: string) => asAda.delete(eventId)],
      ['DELETE all', (eventId: string) => asAda.delete(eventId, 'all')]
    ] as const) {
      const theirs = await call(bobsId)
      const nobodys = await call(missing)
      t.equal(theirs.statusCode, 404, name)
      t.same(theirs.json(), nobodys.json(), `${name}: same body as a missing id`)
      t.same(theirs.headers['content-type'], nobodys.headers['content-type'])
    }
    t.same(await events.findOne({ eventId: bobsId }), stored, 'bob\'s event is unchanged')

    const bobsSeries = id()
    assertEmpty204(t, await asBob.post({ ...BASE, _id: bobsSeries, recurrence: { rule: ['RRULE:FREQ=DAILY;COUNT=3'] } }), 'bob creates a series')
    const occurrence = `${bobsSeries}_20260303T080000Z`
    t.equal((await asBob.get(occurrence)).statusCode, 200, 'bob sees his occurrence')
    const missingOccurrence = `${id()}_20260303T080000Z`
    for (const [name, call] of [
      ['GET', (eventId: string) => asAda.get(eventId)],
      ['PUT', (eventId: string) => asAda.put(eventId, { ...BASE, title: 'taken over' })],
      ['DELETE', (eventId: string) => asAda.delete(eventId, 'thisAndFollowing')]
    ] as const) {
      const theirs = await call(occurrence)
      t.equal(theirs.statusCode, 404, `${name} occurrence`)
      t.same(theirs.json(), (await call(missingOccurrence)).json(), `${name} occurrence: same body as a missing one`)
    }
    const posted = await asAda.post({ ...BASE, recurrence: { eventId: bobsSeries }, originalStartDate: BASE.startDate })
    t.equal(posted.statusCode, 400, 'an edit of another user\'s series is refused like one of a missing series')
    t.same(posted.json(), (await asAda.post({ ...BASE, recurrence: { eventId: id() }, originalStartDate: BASE.startDate })).json())
    t.equal(await events.countDocuments({ 'recurrence.eventId': bobsSeries }), 0, 'nothing was stored for bob\'s series')
    const adasRange = (await asAda.range('2026-03-01T00:00:00Z', '2026-04-01T00:00:00Z')).json() as Array<{ user: string }>
    t.ok(adasRange.every((event) => event.user === ada.userId), 'range reads show only the user\'s own events')
  })

  await t.test('recurring series: range reads, occurrence edits and applyTo', async (t) => {
    const who = as(await signUp(app, { email: uniqueEmail('carol'), password: 'correct horse 3' }))
    const seriesId = id()
    assertEmpty204(t, await who.post({
      ...BASE,
      _id: seriesId,
      title: 'Standup',
      startDate: '2026-03-16T09:00:00+01:00',
      endDate: '2026-03-16T09:15:00+01:00',
      recurrence: { rule: ['RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=6'] }
    }), 'create series')
    const single = id()
    assertEmpty204(t, await who.post({ ...BASE, _id: single, title: 'Lunch', startDate: '2026-03-24T12:00:00+01:00', endDate: '2026-03-24T13:00:00+01:00' }), 'single')
    const range = async () => (await who.range('2026-03-01T00:00:00+01:00', '2026-05-01T00:00:00+02:00')).json() as Array<Record<string, unknown>>
    const starts = async () => (await range()).map((event) => `${String(event.title)}@${String(event.startDate)}`)

    t.same(await starts(), [
      'Standup@2026-03-16T09:00:00+01:00', 'Standup@2026-03-23T09:00:00+01:00', 'Lunch@2026-03-24T12:00:00+01:00',
      'Standup@2026-03-30T09:00:00+02:00', 'Standup@2026-04-06T09:00:00+02:00', 'Standup@2026-04-13T09:00:00+02:00',
      'Standup@2026-04-20T09:00:00+02:00'
    ], 'the series keeps 09:00 Berlin time across the DST change')
    const occurrences = (await range()).filter((event) => event.title === 'Standup')
    t.same(occurrences[0], {
      ...occurrences[0],
      _id: `${seriesId}_20260316T080000Z`,
      recurrence: { eventId: seriesId },
      originalStartDate: '2026-03-16T09:00:00+01:00'
    })
    t.equal((await who.get(seriesId)).json().recurrence.rule[0], 'RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=6', 'the series itself')
    t.equal((await who.get(`${seriesId}_20260330T070000Z`)).json().startDate, '2026-03-30T09:00:00+02:00', 'one occurrence by id')
    t.equal((await who.get(`${seriesId}_20260331T070000Z`)).statusCode, 404, 'no occurrence there')

    // Edit the 23 March occurrence: it moves to the afternoon, the rest of the series stays.
    assertEmpty204(t, await who.put(`${seriesId}_20260323T080000Z`, {
      ...BASE, title: 'Standup (late)', startDate: '2026-03-23T15:00:00+01:00', endDate: '2026-03-23T15:15:00+01:00'
    }), 'edit one occurrence')
    t.same((await starts()).slice(0, 3), ['Standup@2026-03-16T09:00:00+01:00', 'Standup (late)@2026-03-23T15:00:00+01:00', 'Lunch@2026-03-24T12:00:00+01:00'])
    const edited = (await range()).find((event) => event.title === 'Standup (late)')
    t.match(edited, { _id: /^[0-9a-f]{24}$/, recurrence: { eventId: seriesId }, originalStartDate: '2026-03-23T09:00:00+01:00' })
    t.equal((await who.get(`${seriesId}_20260323T080000Z`)).json().title, 'Standup (late)', 'the occurrence id finds the edit')

    // A client that edits an occurrence offline sends it as an event of its own.
    const offlineEdit = id()
    assertEmpty204(t, await who.post({
      ...BASE,
      _id: `optimistic-${offlineEdit}`,
      title: 'Standup (first)',
      startDate: '2026-03-16T08:30:00+01:00',
      endDate: '2026-03-16T08:45:00+01:00',
      recurrence: { eventId: seriesId },
      originalStartDate: '2026-03-16T09:00:00+01:00'
    }), 'POST an occurrence edit')
    t.same((await starts())[0], 'Standup (first)@2026-03-16T08:30:00+01:00')
    const again = await who.post({
      ...BASE,
      _id: id(),
      title: 'Standup (first, again)',
      startDate: '2026-03-16T08:30:00+01:00',
      endDate: '2026-03-16T08:45:00+01:00',
      recurrence: { eventId: seriesId },
      originalStartDate: '2026-03-16T08:00:00Z'
    })
    assertEmpty204(t, again, 'a second edit of the same occurrence')
    t.equal(await events.countDocuments({ 'recurrence.eventId': seriesId, title: /^Standup \(first/ }), 1, 'it updates the stored edit')
    t.equal((await who.get(offlineEdit)).json().title, 'Standup (first, again)')
    const notAnOccurrence = await who.post({ ...BASE, recurrence: { eventId: seriesId }, originalStartDate: '2026-03-17T09:00:00+01:00' })
    t.equal(notAnOccurrence.statusCode, 400)
    t.equal(notAnOccurrence.json().message, 'body/originalStartDate must be the start of an occurrence of the series')
    t.equal((await who.delete(seriesId, 'sometimes')).statusCode, 400, 'applyTo has three values')

    assertEmpty204(t, await who.delete(`${seriesId}_20260330T070000Z`, 'this'), 'delete this occurrence')
    t.notOk((await starts()).includes('Standup@2026-03-30T09:00:00+02:00'))
    t.equal((await who.get(`${seriesId}_20260330T070000Z`)).statusCode, 404)
    t.equal((await who.delete(`${seriesId}_20260330T070000Z`)).statusCode, 404, 'a cancelled occurrence is gone')

    assertEmpty204(t, await who.delete(`${seriesId}_20260413T070000Z`, 'thisAndFollowing'), 'delete this and following')
    t.same(await starts(), [
      'Standup (first, again)@2026-03-16T08:30:00+01:00', 'Standup (late)@2026-03-23T15:00:00+01:00', 'Lunch@2026-03-24T12:00:00+01:00',
      'Standup@2026-04-06T09:00:00+02:00'
    ])

    assertEmpty204(t, await who.delete(String(edited?._id), 'all'), 'delete all from an edited occurrence')
    t.same(await starts(), ['Lunch@2026-03-24T12:00:00+01:00'])
    t.equal(await events.countDocuments({ $or: [{ eventId: seriesId }, { 'recurrence.eventId': seriesId }] }), 0, 'series and its edits are gone')
  })

  await t.test('all-day events and series read by range in their own zone', async (t) => {
    const who = as(await signUp(app, { email: uniqueEmail('kim'), password: 'correct horse 5' }))
    const holiday = id()
    assertEmpty204(t, await who.post({ _id: holiday, title: 'Holiday', isAllDay: true, startDate: '2026-07-01', endDate: '2026-07-03', timeZone: 'Pacific/Auckland' }), 'all-day')
    const weekly = id()
    assertEmpty204(t, await who.post({
      _id: weekly,
      title: 'Bins',
      isAllDay: true,
      startDate: '2026-06-24',
      endDate: '2026-06-25',
      timeZone: 'Pacific/Auckland',
      recurrence: { rule: ['RRULE:FREQ=WEEKLY;UNTIL=20260708'] }
    }), 'all-day series')
    // 1 July in Auckland starts at 30 June 12:00 UTC.
    const read = (await who.range('2026-06-30T12:00:00Z', '2026-07-02T00:00:00Z')).json() as Array<Record<string, unknown>>
    t.same(read.map((event) => [event.title, event.startDate, event.endDate, event._id]), [
      ['Bins', '2026-07-01', '2026-07-02', `${weekly}_20260701`],
      ['Holiday', '2026-07-01', '2026-07-03', holiday]
    ])
    t.same((await who.range('2026-06-30T00:00:00Z', '2026-06-30T11:59:59Z')).json(), [], 'before midnight in Auckland')
    const after = (await who.range('2026-07-07T12:00:00Z', '2026-07-20T00:00:00Z')).json() as Array<Record<string, unknown>>
    t.same(after.map((event) => event.startDate), ['2026-07-08'], 'the series ends on its UNTIL date')
  })

  await t.test('a user without provider credentials writes independently of Sync', async (t) => {
    const dan = await signUp(app, { email: uniqueEmail('dan'), password: 'correct horse 4' })
    const asDan = as(dan)
    t.notOk((await app.mongo.db.collection('users').findOne({ email: { $regex: /^dan-/ } }))?.google, 'no provider account')
    await sync.stop()
    const eventId = id()
    assertEmpty204(t, await asDan.post({ ...BASE, _id: eventId }), 'create while Sync is down')
    assertEmpty204(t, await asDan.put(eventId, { ...BASE, title: 'changed' }), 'update while Sync is down')
    const other = id()
    assertEmpty204(t, await asDan.post({ ...BASE, _id: other }), 'create another')
    assertEmpty204(t, await asDan.delete(other), 'delete while Sync is down')
    t.equal((await asDan.get(eventId)).json().title, 'changed')
    t.ok(log.lines().some((line) => line.reason === 'MissingGoogleRefreshToken' && line.userId === dan.userId && line.level === 30), 'an info line says the provider effect was skipped')
    t.equal(await app.outbox.pending(dan.userId), 4, 'the reports wait in the outbox')
    await waitUntil(async () => (await app.mongo.db.collection('syncOutbox').countDocuments({ user: dan.userId, attempts: { $gt: 0 } })) === 1, 'a failed first attempt')

    await sync.start()
    await waitUntil(async () => await app.outbox.pending(dan.userId) === 0, 'the outbox to drain')
    t.equal((await sync.reports(dan.userId)).length, 4, 'every report arrived')
    t.equal(await sync.eventInvalidations(dan.userId), 4, 'Sync appended one event invalidation per write')
  })

  await t.test('Sync hears of every write once, and the backend publishes nothing itself', async (t) => {
    await waitUntil(async () => await app.outbox.pending() === 0, 'the outbox to drain')
    const adaReports = await sync.reports(ada.userId)
    t.ok(adaReports.length >= 5)
    t.equal(new Set(adaReports.map((report) => report.idempotencyKey)).size, adaReports.length, 'no report twice')
    t.same(published, [], 'no eventsChanged from the backend for its own writes')
  })
})
