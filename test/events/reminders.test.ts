// An event's reminders over HTTP: stored in one order, each time once, read back on the event and
// on each occurrence of a series; absent stays absent (the calendar's default); out of bounds is a
// 400 with the schema's message that changes nothing.
import { randomBytes } from 'node:crypto'
import { test } from 'tap'
import { buildApp, signUp, startDependencies, uniqueEmail } from '../helper.js'

function id (): string {
  return randomBytes(12).toString('hex')
}

test('reminders are stored, read back on events and occurrences, and bounded', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  const ada = await signUp(app, { email: uniqueEmail('ada-reminders'), password: 'correct horse 1', name: 'Ada' })
  const write = async (method: 'POST' | 'PUT', url: string, event: Record<string, unknown>) =>
    await app.inject({ method, url, headers: ada.headers, payload: event })
  const read = async () => {
    const answer = await app.inject({ method: 'GET', url: '/api/event?start=2026-12-01T00:00:00Z&end=2026-12-20T00:00:00Z', headers: ada.headers })
    t.equal(answer.statusCode, 200)
    return answer.json<Array<{ _id: string, title: string, reminders?: Array<{ minutes: number }> }>>()
  }
  const single = id()
  const series = id()
  const base = { startDate: '2026-12-01T09:00:00Z', endDate: '2026-12-01T09:30:00Z', timeZone: 'UTC' }
  t.equal((await write('POST', '/api/event', { _id: single, title: 'Dentist', ...base, reminders: [{ minutes: 60 }, { minutes: 10 }] })).statusCode, 204)
  t.equal((await write('POST', '/api/event', { _id: series, title: 'Walk', ...base, recurrence: { rule: ['RRULE:FREQ=WEEKLY;COUNT=3'] }, reminders: [{ minutes: 5 }] })).statusCode, 204)
  t.equal((await write('POST', '/api/event', { title: 'Plain', ...base })).statusCode, 204)

  let events = await read()
  t.same(events.find((event) => event._id === single)?.reminders, [{ minutes: 10 }, { minutes: 60 }], 'stored nearest the start first')
  const walks = events.filter((event) => event.title === 'Walk')
  t.equal(walks.length, 3)
  t.ok(walks.every((walk) => walk.reminders?.[0]?.minutes === 5 && walk.reminders.length === 1), 'each occurrence of the series has its reminders')
  t.notOk('reminders' in (events.find((event) => event.title === 'Plain') ?? {}), 'absent stays absent: the calendar\'s default')

  t.equal((await write('PUT', `/api/event/${single}`, { title: 'Dentist', ...base, reminders: [] })).statusCode, 204)
  events = await read()
  t.same(events.find((event) => event._id === single)?.reminders, [], 'none is kept as none')

  const refusals: Array<[string, unknown, RegExp]> = [
    ['six reminders', [1, 2, 3, 4, 5, 6].map((minutes) => ({ minutes })), /reminders.*must NOT have more than 5 items/],
    ['more than four weeks', [{ minutes: 40_321 }], /minutes.*must be <= 40320/],
    ['before nothing', [{ minutes: -1 }], /minutes.*must be >= 0/],
    ['a part of a minute', [{ minutes: 1.5 }], /minutes.*must be integer/],
    ['the same time twice', [{ minutes: 10 }, { minutes: 10 }], /must NOT have duplicate items/],
    ['an unknown field', [{ minutes: 10, method: 'email' }], /must NOT have additional properties/]
  ]
  for (const [name, reminders, message] of refusals) {
    const answer = await write('PUT', `/api/event/${single}`, { title: 'Changed', ...base, reminders })
    t.equal(answer.statusCode, 400, `${name}: 400`)
    t.match(answer.json<{ message: string }>().message, message, `${name}: the schema's message`)
  }
  events = await read()
  t.match(events.find((event) => event._id === single), { title: 'Dentist', reminders: [] }, 'nothing changed by a refusal')
})

test('new reminders for all events of a series reach an occurrence edited before, unless its own reminders were changed', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  const ada = await signUp(app, { email: uniqueEmail('ada-series-reminders'), password: 'correct horse 1', name: 'Ada' })
  const read = async () => (await app.inject({ method: 'GET', url: '/api/event?start=2026-12-01T00:00:00Z&end=2026-12-20T00:00:00Z', headers: ada.headers }))
    .json<Array<{ _id: string, title: string, startDate: string, reminders?: Array<{ minutes: number }> }>>()
  const series = id()
  const base = { startDate: '2026-12-01T09:00:00Z', endDate: '2026-12-01T09:30:00Z', timeZone: 'UTC', recurrence: { rule: ['RRULE:FREQ=WEEKLY;COUNT=3'] } }
  t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: ada.headers, payload: { _id: series, title: 'Walk', ...base, reminders: [{ minutes: 5 }] } })).statusCode, 204)
  const [, second, third] = await read()
  if (second === undefined || third === undefined) throw new Error('the series has three occurrences')
  const moved = { title: 'Walk', startDate: second.startDate.replace('09:00', '10:00'), endDate: second.startDate.replace('09:00', '10:30'), timeZone: 'UTC' }
  t.equal((await app.inject({ method: 'PUT', url: `/api/event/${second._id}`, headers: ada.headers, payload: { ...moved, reminders: [{ minutes: 5 }] } })).statusCode, 204, 'one occurrence moved')
  t.equal((await app.inject({ method: 'PUT', url: `/api/event/${third._id}`, headers: ada.headers, payload: { title: 'Walk', startDate: third.startDate, endDate: third.startDate.replace('09:00', '09:30'), timeZone: 'UTC', reminders: [] } })).statusCode, 204, 'another given no reminder')

  t.equal((await app.inject({ method: 'PUT', url: `/api/event/${series}`, headers: ada.headers, payload: { title: 'Walk', ...base, reminders: [{ minutes: 30 }] } })).statusCode, 204, 'all events: 30 minutes before')
  const after = await read()
  t.same(after.map((event) => event.reminders), [[{ minutes: 30 }], [{ minutes: 30 }], []], 'the moved occurrence follows the series; the one with its own reminders keeps them')
  t.equal(after[1]?.startDate, moved.startDate, 'and keeps its own time')
})
