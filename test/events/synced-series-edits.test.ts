import { test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildApp, signUp, startDependencies, uniqueEmail, type SignedIn } from '../helper.js'
import type { ProviderEvent } from '../../schemas/sync/index.js'
import { BACKEND_INTERNAL_PATHS } from '../../schemas/sync/index.js'
import { planEdit, type EventDraft } from '../../web/src/lib/series-edit.js'
import { sendPlan } from '../web-plans.js'
import { seriesIdOf, type ApplyTo, type CalendarEvent } from '../../web/src/lib/events.js'
import type { OutboxRecord } from '../../lib/outbox.js'
import { mintEventId } from '../../lib/events/ids.js'
import { OUTBOX_COLLECTION } from '../../stores/outbox.js'

// Edits of a series that lives at a provider, sent as the web client sends them: its own plans
// (web/src/lib/series-edit.ts planEdit) turned into its own requests (pending-writes.ts stepsOf),
// with bodies that copy what the client read, provider fields included. The server owns those
// fields, so a copy can never collide with the provider identity of another stored event.

const CONNECTION = 'c'.repeat(24)
const CALENDAR = 'work@example.com'
const ZONE = 'Europe/Berlin'
const RANGE = '/api/event?start=2026-05-01T00:00:00Z&end=2026-07-01T00:00:00Z'
const WEEKLY = ['RRULE:FREQ=WEEKLY;COUNT=6']

interface Read extends CalendarEvent { calendarId?: string, providerEventId?: string }

async function send (app: FastifyInstance, token: string, user: SignedIn, events: ProviderEvent[]): Promise<void> {
  const answer = await app.inject({
    method: 'POST',
    url: BACKEND_INTERNAL_PATHS.providerEvents,
    headers: { authorization: `Bearer ${token}` },
    payload: { userId: user.userId, connectionId: CONNECTION, provider: 'google', calendarId: CALENDAR, events }
  })
  if (answer.statusCode !== 200) throw new Error(`provider page answered ${answer.statusCode}: ${answer.body}`)
}

function draftOf (event: Read, title: string): EventDraft {
  return { title, description: '', location: '', isAllDay: false, startDate: event.startDate, endDate: event.endDate, timeZone: event.timeZone, frequency: 'WEEKLY' }
}

test('edits of a provider\'s series sent as the web client sends them', async (t) => {
  const deps = await startDependencies(t, { replicaSet: true })
  const { app, config } = await buildApp(t, deps)
  const token = config.backend.serviceToken
  const range = async (user: SignedIn) => (await app.inject({ method: 'GET', url: RANGE, headers: user.headers })).json<Read[]>()
  const get = async (user: SignedIn, id: string) => (await app.inject({ method: 'GET', url: `/api/event/${id}`, headers: user.headers })).json<Read>()
  // Reports wait in the outbox here: no Sync service answers this app.
  const reports = async (user: SignedIn) => (await app.mongo.db.collection<OutboxRecord>(OUTBOX_COLLECTION).find({ user: user.userId }).toArray())
    .map((record) => record.entry.kind === 'eventChange' ? record.entry.report : undefined)

  // Two series of the same shape: one imported from the provider, one made here and then linked to
  // the copy Sync wrote there (what "our own series once it has synced" is).
  const series = async (label: string): Promise<{ user: SignedIn, series: Read }> => {
    const user = await signUp(app, { email: uniqueEmail(label), password: `pw-for-${label}-1` })
    const content = { title: 'Weekly', startDate: '2026-05-04T09:00:00+02:00', endDate: '2026-05-04T10:00:00+02:00', isAllDay: false, timeZone: ZONE, recurrence: WEEKLY }
    if (label.startsWith('imported')) {
      await send(app, token, user, [{ providerEventId: 'gweekly', updated: '2026-05-01T10:00:00.000Z', status: 'confirmed', content }])
    } else {
      const own = mintEventId()
      const made = await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: own, calendarId: CALENDAR, title: content.title, startDate: content.startDate, endDate: content.endDate, timeZone: ZONE, recurrence: { rule: WEEKLY } } })
      if (made.statusCode !== 204) throw new Error(`create answered ${made.statusCode}: ${made.body}`)
      await send(app, token, user, [{ providerEventId: 'gweekly', eventId: own, updated: '2099-01-01T10:00:00.000Z', status: 'confirmed', content }])
    }
    const found = (await range(user)).find((event) => event.startDate === content.startDate)
    const stored = await get(user, seriesIdOf(found ?? { _id: 'none' }) ?? 'none')
    if (stored.providerEventId !== 'gweekly') throw new Error(`the series is not linked: ${JSON.stringify(stored)}`)
    return { user, series: stored }
  }

  for (const label of ['imported', 'ours-synced']) {
    await t.test(`${label}: "this event" edits one occurrence, and the body's copied provider fields do not collide`, async (t) => {
      const { user, series: master } = await series(`${label}-this`)
      const occurrence = (await range(user)).find((event) => event.startDate.startsWith('2026-05-11')) as Read
      t.equal(occurrence.providerEventId, 'gweekly', 'the occurrence as read carries its series\' provider id')
      const plan = planEdit(occurrence, { ...draftOf(occurrence, 'Moved here'), startDate: '2026-05-11T14:00:00+02:00', endDate: '2026-05-11T15:00:00+02:00' }, 'this', master, mintEventId())
      t.equal(plan.kind, 'replace')
      t.same(await sendPlan(app, user.headers, plan), [204])
      const edit = await get(user, occurrence._id)
      t.match(edit, { title: 'Moved here', startDate: '2026-05-11T14:00:00+02:00', calendarId: CALENDAR })
      t.equal(edit.providerEventId, undefined, 'no provider id until Sync links the one the provider gives it')
      t.match(await get(user, master._id), { title: 'Weekly', providerEventId: 'gweekly' }, 'the series keeps its own')
      const report = (await reports(user)).find((entry) => entry?.eventId === edit._id)
      t.match(report, { operation: 'create', calendarId: CALENDAR, subject: { seriesProviderEventId: 'gweekly', originalStartDate: '2026-05-11T09:00:00+02:00' } }, 'Sync is told, for the series\' calendar')
      t.notOk(report?.subject?.providerEventId, 'with no provider id of its own')

      const deleted = await app.inject({ method: 'DELETE', url: `/api/event/${(await range(user)).find((event) => event.startDate.startsWith('2026-05-18'))?._id ?? ''}`, headers: user.headers })
      t.equal(deleted.statusCode, 204, '"this event" deleted')
      t.same((await range(user)).map((event) => `${event.startDate} ${event.title}`), [
        '2026-05-04T09:00:00+02:00 Weekly',
        '2026-05-11T14:00:00+02:00 Moved here',
        '2026-05-25T09:00:00+02:00 Weekly',
        '2026-06-01T09:00:00+02:00 Weekly',
        '2026-06-08T09:00:00+02:00 Weekly'
      ])
    })

    await t.test(`${label}: "this and following" keeps the head and stores the tail in the same calendar`, async (t) => {
      const { user, series: master } = await series(`${label}-following`)
      const occurrence = (await range(user)).find((event) => event.startDate.startsWith('2026-05-25')) as Read
      const tailId = mintEventId()
      const plan = planEdit(occurrence, draftOf(occurrence, 'Renamed from here'), 'thisAndFollowing' satisfies ApplyTo, master, tailId)
      t.equal(plan.kind, 'split')
      t.same(await sendPlan(app, user.headers, plan), [204, 204], 'the cut and the new series both stored')
      t.same((await range(user)).map((event) => `${event.startDate} ${event.title}`), [
        '2026-05-04T09:00:00+02:00 Weekly',
        '2026-05-11T09:00:00+02:00 Weekly',
        '2026-05-18T09:00:00+02:00 Weekly',
        '2026-05-25T09:00:00+02:00 Renamed from here',
        '2026-06-01T09:00:00+02:00 Renamed from here',
        '2026-06-08T09:00:00+02:00 Renamed from here'
      ], 'no occurrence lost')
      const tail = await get(user, tailId)
      t.match(tail, { calendarId: CALENDAR, recurrence: { rule: ['RRULE:FREQ=WEEKLY;COUNT=3'] } })
      t.equal(tail.providerEventId, undefined, 'the new series gets its own provider id from Sync, not the old one\'s')
      const created = (await reports(user)).find((entry) => entry?.eventId === tail._id)
      t.match(created, { operation: 'create', calendarId: CALENDAR })
    })
    await t.test(`${label}: "all events" moved to 14:00 takes its exceptions along: a cancelled day stays cancelled, a renamed one keeps its name`, async (t) => {
      const { user, series: master } = await series(`${label}-moved`)
      // Another client cancelled 18 May and renamed 1 June (the provider's exceptions, as a page brings them).
      await send(app, token, user, [
        { providerEventId: 'gweekly_20260518T070000Z', recurringEventId: 'gweekly', originalStartDate: '2026-05-18T09:00:00+02:00', updated: '2026-05-02T10:00:00.000Z', status: 'cancelled' },
        { providerEventId: 'gweekly_20260601T070000Z', recurringEventId: 'gweekly', originalStartDate: '2026-06-01T09:00:00+02:00', updated: '2026-05-02T10:00:00.000Z', status: 'confirmed', content: { title: 'Weekly (renamed there)', startDate: '2026-06-01T09:00:00+02:00', endDate: '2026-06-01T10:00:00+02:00', isAllDay: false, timeZone: ZONE } }
      ])
      const occurrence = (await range(user)).find((event) => event.startDate.startsWith('2026-05-11')) as Read
      const plan = planEdit(occurrence, { ...draftOf(occurrence, 'Weekly'), startDate: '2026-05-11T14:00:00+02:00', endDate: '2026-05-11T15:00:00+02:00' }, 'all', master, mintEventId())
      t.same(await sendPlan(app, user.headers, plan), [204])
      t.same((await range(user)).map((event) => `${event.startDate} ${event.title}`), [
        '2026-05-04T14:00:00+02:00 Weekly',
        '2026-05-11T14:00:00+02:00 Weekly',
        '2026-05-25T14:00:00+02:00 Weekly',
        '2026-06-01T14:00:00+02:00 Weekly (renamed there)',
        '2026-06-08T14:00:00+02:00 Weekly'
      ], 'nothing left at 10:00, the cancelled day not back')
      const seriesReport = (await reports(user)).find((entry) => entry?.eventId === master._id && entry.operation === 'update')
      t.match(seriesReport, { operation: 'update', subject: { providerEventId: 'gweekly', content: { startDate: '2026-05-04T14:00:00+02:00' } } }, 'one report: the series; its exceptions move with it at the provider')
    })
  }

  await t.test('an existing event stays in its calendar: naming another is refused and changes nothing', async (t) => {
    const { user, series: master } = await series('imported-move')
    for (const [url, payload] of [
      [`/api/event/${master._id}`, { title: 'Elsewhere', startDate: master.startDate, endDate: master.endDate, timeZone: ZONE, recurrence: { rule: WEEKLY }, calendarId: 'other@example.com' }],
      [`/api/event/${master._id}_20260511T070000Z`, { title: 'Elsewhere', startDate: '2026-05-11T09:00:00+02:00', endDate: '2026-05-11T10:00:00+02:00', timeZone: ZONE, calendarId: 'other@example.com' }]
    ] as const) {
      const answer = await app.inject({ method: 'PUT', url, headers: user.headers, payload })
      t.equal(answer.statusCode, 400, url)
      t.match(answer.json(), { code: 'EVENT_INVALID', message: /calendarId must be the calendar the event is in/ })
    }
    t.notOk((await range(user)).some((event) => event.title === 'Elsewhere'), 'nothing written')
  })
})
