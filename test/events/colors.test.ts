// An event's own colour over HTTP: one of Google's eleven event colours by name, stored and read
// back on the event and on each occurrence of a series; absent stays absent (the calendar's
// colour); anything else is a 400 with the schema's message that changes nothing.
import { randomBytes } from 'node:crypto'
import { test } from 'tap'
import { buildApp, signUp, startDependencies, uniqueEmail } from '../helper.js'

function id (): string {
  return randomBytes(12).toString('hex')
}

test('an event\'s colour is stored, read back on events and occurrences, and one of the eleven', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  const ada = await signUp(app, { email: uniqueEmail('ada-colors'), password: 'correct horse 1', name: 'Ada' })
  const write = async (method: 'POST' | 'PUT', url: string, event: Record<string, unknown>) =>
    await app.inject({ method, url, headers: ada.headers, payload: event })
  const read = async () => {
    const answer = await app.inject({ method: 'GET', url: '/api/event?start=2026-12-01T00:00:00Z&end=2026-12-20T00:00:00Z', headers: ada.headers })
    t.equal(answer.statusCode, 200)
    return answer.json<Array<{ _id: string, title: string, color?: string }>>()
  }
  const single = id()
  const series = id()
  const base = { startDate: '2026-12-01T09:00:00Z', endDate: '2026-12-01T09:30:00Z', timeZone: 'UTC' }
  t.equal((await write('POST', '/api/event', { _id: single, title: 'Dentist', ...base, color: 'tomato' })).statusCode, 204)
  t.equal((await write('POST', '/api/event', { _id: series, title: 'Walk', ...base, recurrence: { rule: ['RRULE:FREQ=WEEKLY;COUNT=3'] }, color: 'sage' })).statusCode, 204)
  t.equal((await write('POST', '/api/event', { title: 'Plain', ...base })).statusCode, 204)

  let events = await read()
  t.equal(events.find((event) => event._id === single)?.color, 'tomato')
  const walks = events.filter((event) => event.title === 'Walk')
  t.equal(walks.length, 3)
  t.ok(walks.every((walk) => walk.color === 'sage'), 'each occurrence of the series has its colour')
  t.notOk('color' in (events.find((event) => event.title === 'Plain') ?? {}), 'absent stays absent: the calendar\'s colour')
  const one = await app.inject({ method: 'GET', url: `/api/event/${single}`, headers: ada.headers })
  t.equal(one.json<{ color?: string }>().color, 'tomato', 'one event read alone')

  for (const color of ['lavender', 'sage', 'grape', 'flamingo', 'banana', 'tangerine', 'peacock', 'graphite', 'blueberry', 'basil', 'tomato']) {
    t.equal((await write('PUT', `/api/event/${single}`, { title: 'Dentist', ...base, color })).statusCode, 204, `${color} taken`)
  }
  t.equal((await write('PUT', `/api/event/${single}`, { title: 'Dentist', ...base })).statusCode, 204)
  events = await read()
  t.notOk('color' in (events.find((event) => event._id === single) ?? {}), 'a change without a colour: the calendar\'s colour again')
  t.equal((await write('PUT', `/api/event/${single}`, { title: 'Dentist', ...base, color: 'peacock' })).statusCode, 204)

  const refusals: Array<[string, unknown]> = [
    ['a colour Google does not have', 'cocoa'],
    ['a CSS name', 'red'],
    ['Google\'s id instead of the name', '7'],
    ['a hex colour', '#039be5'],
    ['another case', 'Tomato'],
    ['empty', ''],
    ['null', null],
    ['a number', 3]
  ]
  for (const [name, color] of refusals) {
    const answer = await write('PUT', `/api/event/${single}`, { title: 'Changed', ...base, color })
    t.equal(answer.statusCode, 400, `${name}: 400`)
    t.match(answer.json<{ message: string }>().message, /^body\/color must be (equal to one of the allowed values|string)$/, `${name}: the schema's message`)
  }
  events = await read()
  t.match(events.find((event) => event._id === single), { title: 'Dentist', color: 'peacock' }, 'nothing changed by a refusal')
})
