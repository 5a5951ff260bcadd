// The rules that keep a write from being lost or regretted, without a browser: the requests of a
// change, their order, what a failed answer means, retry and discard, the marks and counts shown,
// the drawing of unsent writes, the undo of each kind of change, and the sign-in failure sentences.
import { test } from 'tap'
import {
  EMPTY_PENDING, MAX_AUTOMATIC_RETRIES, PENDING_WRITES_KEY, discard, enqueue, loadPending, markOf, nextRetryAt, nextToSend, outcomeOf,
  resumeDelayed, resumeWaiting, retry, savePending, stepDone, stepFailed, stepsOf, summaryOf, unsentOf, waitForConnection, waitForServer,
  type PendingData
} from '../../web/src/lib/pending-writes.js'
import { applyEffect, type Effect } from '../../web/src/lib/optimistic.js'
import { needsSeries, undoOf } from '../../web/src/lib/undo.js'
import { authFailureMessage } from '../../web/src/lib/auth-errors.js'
import { memoryStore } from '../../web/src/lib/storage.js'
import type { CalendarEvent } from '../../web/src/lib/events.js'

const zone = 'Europe/Berlin'
const USER = 'aaaaaaaaaaaaaaaaaaaaaaaa'
const A = '6b0791c1de03bb78bdd34ce1'
const B = '6b0791c1de03bb78bdd34ce2'
const SERIES = '6b0791c1de03bb78bdd34ce3'
const day = { from: new Date('2026-03-01T23:00:00Z'), to: new Date('2026-03-02T23:00:00Z') }

function event (id: string, title: string, start = '2026-03-02T09:00:00+01:00', end = '2026-03-02T10:00:00+01:00', extra: Partial<CalendarEvent> = {}): CalendarEvent {
  return { _id: id, title, startDate: start, endDate: end, isAllDay: false, timeZone: zone, status: 'confirmed', origin: 'compass', priority: 'unassigned', ...extra }
}

function change (e: CalendarEvent) {
  const { _id, ...fields } = e
  return { _id, ...fields }
}

const create = (e: CalendarEvent): Effect => ({ kind: 'plan', plan: { kind: 'create', change: change(e) } })
const move = (e: CalendarEvent, start: string, end: string): Effect => ({ kind: 'plan', plan: { kind: 'replace', id: e._id, change: { ...change(e), startDate: start, endDate: end } } })

test('each change becomes the requests of the events API, ids included', async (t) => {
  const dentist = event(A, 'Dentist')
  t.same(stepsOf(create(dentist)), [{ method: 'POST', path: '/event', body: change(dentist) }], 'a create posts the id it was made with')
  const [put] = stepsOf(move(dentist, '2026-03-02T10:00:00+01:00', '2026-03-02T11:00:00+01:00'))
  t.equal(put?.method, 'PUT')
  t.equal(put?.path, `/event/${A}`)
  t.equal(put?.body?._id, undefined, 'a PUT names the event in its path only')
  t.same(stepsOf({ kind: 'delete', event: dentist, applyTo: 'this' }), [{ method: 'DELETE', path: `/event/${A}` }], 'a single event is deleted without applyTo')
  const occurrence = event(`${SERIES}_20260302T080000Z`, 'Yoga', undefined, undefined, { recurrence: { eventId: SERIES } })
  t.same(stepsOf({ kind: 'delete', event: occurrence, applyTo: 'thisAndFollowing' }), [{ method: 'DELETE', path: `/event/${SERIES}_20260302T080000Z`, query: { applyTo: 'thisAndFollowing' } }])
  const split = stepsOf({ kind: 'plan', plan: { kind: 'split', deleteId: occurrence._id, create: change(event(B, 'Yoga')) } })
  t.same(split.map((step) => step.method), ['DELETE', 'POST'], 'this and following: the cut, then the new series')
})

test('writes go in order; one waits behind an earlier unsent write to the same event only', async (t) => {
  let data = enqueue(EMPTY_PENDING, USER, create(event(A, 'Dentist')))
  data = enqueue(data, USER, move(event(A, 'Dentist'), '2026-03-02T10:00:00+01:00', '2026-03-02T11:00:00+01:00'))
  data = enqueue(data, USER, create(event(B, 'Lunch')))
  data = enqueue(data, 'bbbbbbbbbbbbbbbbbbbbbbbb', create(event(B, 'Someone else')))
  t.equal(nextToSend(data, USER)?.seq, 1, 'the oldest first')
  const refused = stepFailed(data, 1, { state: 'failed', reason: 'Not saved: the server could not take it (503). Retry in a moment.' })
  t.equal(nextToSend(refused, USER)?.seq, 3, 'the move of the refused event waits; another event goes on')
  t.same(markOf(refused, USER, A), { seq: 1, state: 'failed', reason: 'Not saved: the server could not take it (503). Retry in a moment.', deletion: false }, 'the refused create is marked on its event')
  t.same(summaryOf(refused, USER), { queued: 2, waiting: 0, delayed: 0, failed: 1, retryAt: null })
  t.equal(unsentOf(refused, 'bbbbbbbbbbbbbbbbbbbbbbbb').length, 1, 'each account sees its own writes only')

  const retried = retry(refused, 1)
  t.equal(nextToSend(retried, USER)?.seq, 1, 'a retry puts it first again')
  const sent = stepDone(retried, 1)
  t.equal(sent.writes.find((write) => write.seq === 1)?.state, 'sent')
  t.equal(nextToSend(sent, USER)?.seq, 2, 'then the move')

  const store = memoryStore()
  savePending(store, sent)
  t.same(loadPending(store), sent, 'kept in storage as it is')
  savePending(store, EMPTY_PENDING)
  t.equal(store.getItem(PENDING_WRITES_KEY), null, 'an empty queue leaves nothing behind')
  store.setItem(PENDING_WRITES_KEY, '{"version":2}')
  t.same(loadPending(store), EMPTY_PENDING, 'an unknown shape is not read')
})

test('no connection: every queued write waits and goes again, in order, when it returns', async (t) => {
  let data: PendingData = enqueue(enqueue(EMPTY_PENDING, USER, create(event(A, 'Dentist'))), USER, create(event(B, 'Lunch')))
  const outcome = outcomeOf({ method: 'POST', path: '/event' }, { kind: 'network' })
  t.equal(outcome.state, 'waiting')
  if (outcome.state === 'done') throw new Error('unexpected')
  data = waitForConnection(stepFailed(data, 1, outcome), USER, outcome.reason)
  t.same(data.writes.map((write) => write.state), ['waiting', 'waiting'])
  t.equal(nextToSend(data, USER), null, 'nothing is sent while offline')
  t.match(markOf(data, USER, B)?.reason, /no connection/)
  data = resumeWaiting(data, USER)
  t.same(data.writes.map((write) => write.state), ['queued', 'queued'])
  t.equal(nextToSend(data, USER)?.seq, 1)
})

test('429 with Retry-After: the writes wait the time named, then go again by themselves, in order', async (t) => {
  const post = { method: 'POST' as const, path: '/event' }
  const now = Date.parse('2026-03-02T09:00:00Z')
  const rateLimited = { kind: 'status' as const, status: 429, message: 'Too many requests', retryAfter: '30' }
  const outcome = outcomeOf(post, rateLimited, now)
  t.same(outcome, { state: 'delayed', reason: 'Not saved yet: the server asked to wait. It is sent again by itself.', retryAt: now + 30_000 })
  t.same(outcomeOf(post, { ...rateLimited, retryAfter: 'Mon, 02 Mar 2026 09:00:05 GMT' }, now), { ...outcome, retryAt: now + 5000 }, 'an HTTP date too')
  t.equal(outcomeOf(post, { ...rateLimited, retryAfter: null }, now).state, 'failed', 'no wait named: refused, as before')
  t.equal(outcomeOf(post, { ...rateLimited, retryAfter: '3600' }, now).state, 'failed', 'a wait of an hour is not waited out by itself')
  t.equal(outcomeOf(post, rateLimited, now, MAX_AUTOMATIC_RETRIES).state, 'failed', `after ${MAX_AUTOMATIC_RETRIES} waits for one write: refused`)
  t.same(outcomeOf(post, { kind: 'status', status: 503, code: 'OVERLOADED', message: 'The service is overloaded; try again shortly', retryAfter: '5' }, now), { ...outcome, retryAt: now + 5000 }, 'a 503 naming a wait (load shed, database away) is waited out too')
  t.same(outcomeOf(post, { kind: 'status', status: 503, message: 'Service Unavailable', retryAfter: null }, now), { state: 'failed', reason: 'Not saved: the server could not take it (503). Retry in a moment.' }, 'a 503 naming no wait is refused')
  t.equal(outcomeOf(post, { kind: 'status', status: 503, code: 'MAINTENANCE', message: 'maintenance', retryAfter: '30' }, now).state, 'failed', 'maintenance is not waited out: it lasts as long as an operator wants')
  if (outcome.state !== 'delayed') throw new Error('unexpected')

  let data: PendingData = enqueue(enqueue(EMPTY_PENDING, USER, create(event(A, 'Dentist'))), USER, create(event(B, 'Lunch')))
  data = waitForServer(stepFailed(data, 1, outcome), USER, outcome.retryAt)
  t.same(data.writes.map((write) => [write.state, write.retryAt]), [['delayed', now + 30_000], ['delayed', now + 30_000]], 'the writes behind it wait with it')
  t.equal(data.writes[0]?.delays, 1, 'the wait is counted on the refused write')
  data = enqueue(data, USER, create(event(SERIES, 'Later')))
  t.equal(data.writes[2]?.state, 'delayed', 'a write made during the wait waits too')
  t.equal(nextToSend(data, USER), null, 'nothing is sent during the wait')
  t.equal(nextRetryAt(data, USER), now + 30_000)
  t.same(markOf(data, USER, A), { seq: 1, state: 'waiting', reason: 'Not saved yet: the server asked to wait. It is sent again by itself.', deletion: false }, 'the event shows it is on its way')
  t.same(summaryOf(data, USER), { queued: 0, waiting: 0, delayed: 3, failed: 0, retryAt: now + 30_000 }, 'the status line can count down')
  t.same(resumeDelayed(data, USER, now + 29_999).writes.map((write) => write.state), ['delayed', 'delayed', 'delayed'], 'not before the wait is over')
  const resumed = resumeDelayed(data, USER, now + 30_000)
  t.same(resumed.writes.map((write) => write.state), ['queued', 'queued', 'queued'])
  t.equal(nextToSend(resumed, USER)?.seq, 1, 'then in the order they were made')
  t.equal(stepDone(resumed, 1).writes[0]?.delays, undefined, 'taken: the count is over')
  t.equal(nextToSend(retry(data, 2), USER)?.seq, 1, 'Retry during the wait ends it for all, in order')
  t.equal(nextToSend(data, 'bbbbbbbbbbbbbbbbbbbbbbbb'), null)
  t.equal(nextRetryAt(data, 'bbbbbbbbbbbbbbbbbbbbbbbb'), null, 'another account does not wait')
})

test('what a failed answer means', async (t) => {
  const post = { method: 'POST' as const, path: '/event' }
  t.same(outcomeOf({ method: 'DELETE', path: `/event/${A}` }, { kind: 'status', status: 404, message: 'Event not found' }), { state: 'done' }, 'a deletion of what is gone is done')
  t.equal(outcomeOf(post, { kind: 'status', status: 404, message: 'Event not found' }).state, 'failed', 'a write to what is gone is not')
  t.same(outcomeOf(post, { kind: 'status', status: 401, message: 'unauthorised' }), { state: 'waiting', reason: 'Not saved yet: sign in again to send it.' })
  t.match(outcomeOf(post, { kind: 'status', status: 410, code: 'CONNECTION_REVOKED', message: 'revoked' }), { state: 'failed', reason: /revoked\. Reconnect/ })
  t.match(outcomeOf(post, { kind: 'status', status: 503, code: 'MAINTENANCE', message: 'maintenance' }), { state: 'failed', reason: /maintenance/ })
  t.same(outcomeOf(post, { kind: 'status', status: 429, message: 'Too many requests; try again in 30 seconds' }), { state: 'failed', reason: 'Not saved: too many changes at once (429). Retry in a moment.' })
  t.same(outcomeOf(post, { kind: 'status', status: 502, message: 'Bad Gateway' }), { state: 'failed', reason: 'Not saved: the server could not take it (502). Retry in a moment.' })
  // A refusal is said in words for the person, from the API's code: never its message.
  t.same(outcomeOf(post, { kind: 'status', status: 400, message: 'body/endDate must be after startDate' }), { state: 'failed', reason: 'Not saved: the calendar did not accept the event\'s details. Discard, then make the change again.' })
  t.same(outcomeOf(post, { kind: 'status', status: 409, code: 'EVENT_ID_TAKEN', message: 'Event id 6a1b2c3d4e5f60718293a4b5 is already in use' }), { state: 'failed', reason: 'Not saved: this event was being saved from another tab or device at the same time. Retry to send it again.' })
  t.same(outcomeOf(post, { kind: 'status', status: 400, code: 'EVENT_CHANGE_NOT_ALLOWED', message: 'cannot turn a single event into an occurrence' }), { state: 'failed', reason: 'Not saved: this kind of change cannot be made to this event. Discard it and make the change another way.' })
  t.same(outcomeOf(post, { kind: 'status', status: 403, code: 'BILLING_REQUIRED', message: 'Billing required' }), { state: 'failed', reason: 'Not saved: your calendar is read-only until you subscribe.' })
  t.same(outcomeOf(post, { kind: 'status', status: 404, message: 'Not Found' }), { state: 'failed', reason: 'Not saved: this event is no longer in your calendar; it may have been deleted elsewhere.' })
  t.same(outcomeOf(post, { kind: 'status', status: 403, message: 'Forbidden' }), { state: 'failed', reason: 'Not saved: this account may not make this change.' })
  t.same(outcomeOf(post, { kind: 'status', status: 418, code: 'SOMETHING_NEW', message: 'teapot' }), { state: 'failed', reason: 'Not saved: the server refused this change (418). Retry, or discard it.' })
})

test('discard gives up a write and what was made on top of it, nothing else', async (t) => {
  let data = enqueue(EMPTY_PENDING, USER, create(event(A, 'Dentist')))
  data = enqueue(data, USER, create(event(B, 'Lunch')))
  data = enqueue(data, USER, move(event(A, 'Dentist'), '2026-03-02T10:00:00+01:00', '2026-03-02T11:00:00+01:00'))
  const left = discard(data, 1)
  t.same(left.writes.map((write) => write.seq), [2], 'the create and the later move of that event go; the other event stays')
  t.equal(discard(data, 99), data, 'an unknown write changes nothing')
})

test('a write still waiting is drawn; a refused deletion keeps its event on the grid', async (t) => {
  const dentist = event(A, 'Dentist')
  const lunch = event(B, 'Lunch', '2026-03-02T12:00:00+01:00', '2026-03-02T13:00:00+01:00')
  t.same(applyEffect([], create(dentist), day, zone).map((e) => e._id), [A], 'a new event is drawn')
  t.same(applyEffect([dentist], create(dentist), day, zone).length, 1, 'once, however often it is applied')
  const moved = applyEffect([dentist, lunch], move(dentist, '2026-03-02T10:00:00+01:00', '2026-03-02T11:00:00+01:00'), day, zone)
  t.equal(moved.find((e) => e._id === A)?.startDate, '2026-03-02T10:00:00+01:00')
  t.same(applyEffect([lunch], move(dentist, '2026-03-02T10:00:00+01:00', '2026-03-02T11:00:00+01:00'), day, zone).map((e) => e._id).sort(), [A, B], 'an event moved into the range is drawn there')
  t.same(applyEffect([lunch], move(dentist, '2026-03-05T10:00:00+01:00', '2026-03-05T11:00:00+01:00'), day, zone).map((e) => e._id), [B], 'and not when moved elsewhere')
  const seriesChange: Effect = { kind: 'plan', plan: { kind: 'replace', id: SERIES, change: { ...change(event(SERIES, 'Yoga')), recurrence: { rule: ['RRULE:FREQ=DAILY'] } } } }
  t.same(applyEffect([lunch], seriesChange, day, zone), [lunch], 'a whole series is left to the next read')
  const deletion: Effect = { kind: 'delete', event: dentist, applyTo: 'this' }
  t.same(applyEffect([dentist, lunch], deletion, day, zone).map((e) => e._id), [B], 'a deletion on its way removes the event')
  t.same(applyEffect([dentist, lunch], deletion, day, zone, true).map((e) => e._id), [A, B], 'one not taken keeps it, to be marked')
  const first = event(`${SERIES}_20260302T080000Z`, 'Yoga', '2026-03-02T09:00:00+01:00', '2026-03-02T10:00:00+01:00', { recurrence: { eventId: SERIES } })
  const second = event(`${SERIES}_20260302T100000Z`, 'Yoga', '2026-03-02T11:00:00+01:00', '2026-03-02T12:00:00+01:00', { recurrence: { eventId: SERIES } })
  t.same(applyEffect([first, second, lunch], { kind: 'delete', event: second, applyTo: 'thisAndFollowing' }, day, zone).map((e) => e._id), [first._id, B], 'this and following: the earlier occurrence stays')
  t.same(applyEffect([first, second, lunch], { kind: 'delete', event: second, applyTo: 'all' }, day, zone).map((e) => e._id), [B], 'all: the series goes')
})

test('the undo of each change puts back what was there', async (t) => {
  const dentist = event(A, 'Dentist')
  const deleted = undoOf({ kind: 'delete', event: dentist, applyTo: 'this' }, { before: dentist, series: null })
  t.equal(deleted?.label, 'Event deleted')
  t.same(deleted?.inverse, [{ kind: 'plan', plan: { kind: 'create', change: change(dentist) } }], 'a deleted event is posted again under its own id')

  const occurrence = event(`${SERIES}_20260302T080000Z`, 'Yoga', undefined, undefined, { recurrence: { eventId: SERIES }, originalStartDate: '2026-03-02T09:00:00+01:00' })
  const back = undoOf({ kind: 'delete', event: occurrence, applyTo: 'this' }, { before: occurrence, series: null })
  const plan = back?.inverse[0]?.kind === 'plan' ? back.inverse[0].plan : null
  t.equal(plan?.kind === 'replace' ? plan.id : null, occurrence._id, 'a deleted occurrence is put back by its id')
  t.equal(plan?.kind === 'replace' ? plan.change.status : null, 'confirmed')

  const series = event(SERIES, 'Yoga', undefined, undefined, { recurrence: { rule: ['RRULE:FREQ=DAILY;COUNT=5'] } })
  t.equal(needsSeries({ kind: 'delete', event: occurrence, applyTo: 'all' }), SERIES, 'a series deletion needs the series')
  t.equal(undoOf({ kind: 'delete', event: occurrence, applyTo: 'all' }, { before: occurrence, series: null }), null, 'without it, no undo is offered')
  t.same(undoOf({ kind: 'delete', event: occurrence, applyTo: 'all' }, { before: occurrence, series })?.inverse, [{ kind: 'plan', plan: { kind: 'create', change: change(series) } }])

  const later = '2026-03-02T10:00:00+01:00'
  t.equal(undoOf(move(dentist, later, '2026-03-02T11:00:00+01:00'), { before: dentist, series: null })?.label, 'Event moved')
  t.equal(undoOf(move(dentist, dentist.startDate, '2026-03-02T11:00:00+01:00'), { before: dentist, series: null })?.label, 'Event resized')
  const renamed: Effect = { kind: 'plan', plan: { kind: 'replace', id: A, change: { ...change(dentist), title: 'Dentist (Dr. Kim)' } } }
  const undoRename = undoOf(renamed, { before: dentist, series: null })
  t.equal(undoRename?.label, 'Event changed')
  const restore = undoRename?.inverse[0]
  t.same(restore?.kind === 'plan' && restore.plan.kind === 'replace' ? restore.plan.change.title : null, 'Dentist', 'the edit is replaced by what was read')
  t.equal(undoOf(renamed, { before: null, series: null }), null, 'what was there is not known: no undo')

  t.same(undoOf(create(dentist), { before: null, series: null })?.inverse.map((effect) => effect.kind), ['delete'], 'a create is undone by deleting it')
  const split: Effect = { kind: 'plan', plan: { kind: 'split', deleteId: occurrence._id, create: change(event(B, 'Yoga', undefined, undefined, { recurrence: { rule: ['RRULE:FREQ=DAILY'] } })) } }
  t.equal(needsSeries(split), SERIES)
  t.same(undoOf(split, { before: null, series })?.inverse.map((effect) => effect.kind), ['delete', 'plan'], 'this and following: the new series goes, the old one comes back whole')
  t.equal(undoOf(split, { before: null, series: null }), null)
})

test('a failed sign-in says what happened', async (t) => {
  t.equal(authFailureMessage({ kind: 'network', online: true }), 'The server cannot be reached right now. Nothing was changed; try again in a moment.')
  t.equal(authFailureMessage({ kind: 'network', online: false }), 'This browser is offline. Connect to the internet and try again.')
  t.equal(authFailureMessage({ kind: 'status', status: 429, retryAfter: '90' }), 'Too many attempts. Try again in 2 minutes.')
  t.equal(authFailureMessage({ kind: 'status', status: 503, retryAfter: null }), 'The sign-in service is not available right now (503). Try again in a few minutes.')
  t.equal(authFailureMessage({ kind: 'status', status: 500, retryAfter: null }), 'The server could not finish this (500). Try again in a few minutes.')
  t.equal(authFailureMessage({ kind: 'status', status: 413, retryAfter: null }), 'What was entered is too long.')
  t.equal(authFailureMessage({ kind: 'status', status: 403, retryAfter: null }), 'The server refused the request (403). Reload the page and try again.')
})
