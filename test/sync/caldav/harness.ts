// The Sync service against a real Radicale: the Google harness's stack (recording backend, manual
// clock, Sync on its own port) with the CalDAV adapter on the test's clock, and a connect through
// the signed internal route, as the backend's session route makes it.
import type { Test } from 'tap'
import { SYNC_PATHS } from '../../../schemas/sync/index.js'
import { CalDavAdapter } from '../../../sync/providers/caldav/adapter.js'
import { caldavFetch } from './fetch.js'
import { newUserId } from '../helper.js'
import { internalPostAs } from '../provider-harness.js'
import { startStack } from '../google/harness.js'
import type { Stack, StackOptions } from '../google/harness.js'
import { startRadicale } from './radicale.js'
import type { Radicale } from './radicale.js'

export const USER = 'alice'
export const PASSWORD = 'app-password-1'
export const POLL_MS = 5 * 60_000

export interface CalDavStack extends Stack {
  radicale: Radicale
  /** The user's calendar on Radicale (created empty). */
  calendarUrl: string
  /** Puts a function between the adapter and Radicale (null: none); it gets the real transport. */
  intercept: (interceptor: Interceptor | null) => void
}

type Interceptor = (input: string | URL | Request, init: RequestInit, forward: typeof caldavFetch) => Promise<Response>

export async function startCalDavStack (t: Test, options: StackOptions = {}): Promise<CalDavStack> {
  const radicale = await startRadicale(t)
  await radicale.setPassword(USER, PASSWORD)
  const calendarUrl = await radicale.createCalendar(USER, PASSWORD, 'work', 'Work')
  let stack: Stack | null = null
  let interceptor: Interceptor | null = null
  const adapter = new CalDavAdapter({
    pollIntervalMs: POLL_MS,
    now: () => stack?.clock.now() ?? new Date(),
    fetch: async (input, init) => interceptor === null ? await caldavFetch(input, init) : await interceptor(input, init ?? {}, caldavFetch)
  })
  stack = await startStack(t, { ...options, appOptions: { ...options.appOptions, providers: { caldav: adapter } } })
  return { ...stack, radicale, calendarUrl, intercept: (next) => { interceptor = next } }
}

export async function connectCalDav (stack: Stack, userId: string, body: Record<string, unknown>): Promise<{ statusCode: number, body: Record<string, unknown> }> {
  return await internalPost(stack, userId, SYNC_PATHS.connectCalDav(userId), body)
}

/** A signed call of the backend to one of Sync's internal user routes. */
export async function internalPost (stack: Stack, userId: string, url: string, body: Record<string, unknown>): Promise<{ statusCode: number, body: Record<string, unknown> }> {
  const answer = await internalPostAs(stack, userId, url, body)
  return { statusCode: answer.statusCode, body: answer.json<Record<string, unknown>>() }
}

/** Connect with the right password, then import and catch up: a healthy connection. */
export async function connectAndImport (stack: CalDavStack): Promise<{ userId: string, connectionId: string }> {
  const userId = newUserId()
  const answer = await connectCalDav(stack, userId, { serverUrl: stack.radicale.url, username: USER, password: PASSWORD })
  if (answer.statusCode !== 200) throw new Error(`connect answered ${answer.statusCode}: ${JSON.stringify(answer.body)}`)
  await stack.drain()
  return { userId, connectionId: String(answer.body['connectionId']) }
}

/** One VCALENDAR around the given VEVENT lines (CRLF, as RFC 5545 writes it). */
export function ics (...vevents: string[][]): string {
  return ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//test//other client//EN', ...vevents.flatMap((lines) => ['BEGIN:VEVENT', ...lines, 'END:VEVENT']), 'END:VCALENDAR', ''].join('\r\n')
}

export const BERLIN = [
  'BEGIN:VTIMEZONE', 'TZID:Europe/Berlin',
  'BEGIN:STANDARD', 'DTSTART:19701025T030000', 'RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU', 'TZOFFSETFROM:+0200', 'TZOFFSETTO:+0100', 'END:STANDARD',
  'BEGIN:DAYLIGHT', 'DTSTART:19700329T020000', 'RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU', 'TZOFFSETFROM:+0100', 'TZOFFSETTO:+0200', 'END:DAYLIGHT',
  'END:VTIMEZONE'
]

/** A weekly series with a moved occurrence (RECURRENCE-ID) and a removed one (EXDATE), in a custom-named VTIMEZONE. */
export function seriesIcs (): string {
  const zone = BERLIN.map((line) => line.replace('TZID:Europe/Berlin', 'TZID:Berlin custom'))
  const body = ics(
    ['UID:series-1', 'DTSTAMP:20261101T000000Z', 'LAST-MODIFIED:20261101T000000Z', 'DTSTART;TZID=Berlin custom:20261102T090000', 'DTEND;TZID=Berlin custom:20261102T100000', 'SUMMARY:Weekly review', 'RRULE:FREQ=WEEKLY;COUNT=10', 'EXDATE;TZID=Berlin custom:20261116T090000'],
    ['UID:series-1', 'DTSTAMP:20261101T000000Z', 'LAST-MODIFIED:20261101T000000Z', 'RECURRENCE-ID;TZID=Berlin custom:20261109T090000', 'DTSTART;TZID=Berlin custom:20261109T110000', 'DTEND;TZID=Berlin custom:20261109T120000', 'SUMMARY:Weekly review (moved)']
  )
  return body.replace('PRODID:-//test//other client//EN\r\n', `PRODID:-//test//other client//EN\r\n${zone.join('\r\n')}\r\n`)
}

export function allDayIcs (uid = 'holiday-1', summary = 'Holiday'): string {
  return ics([`UID:${uid}`, 'DTSTAMP:20261101T000000Z', 'DTSTART;VALUE=DATE:20261224', 'DTEND;VALUE=DATE:20261227', `SUMMARY:${summary}`])
}
