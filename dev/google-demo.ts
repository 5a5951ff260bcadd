// The demo Google account of the local stack. The Google stand-in forgets everything when it stops,
// so the local stack creates the account and its calendars again at every start, through the
// stand-in's control API (the same surface tests use to act as the person's other devices). The
// events sit around the day the stack starts, so the first import has something to show today.
import { DateTime } from 'luxon'

export const DEMO_ACCOUNT = { email: 'demo@example.com', name: 'Demo User' } as const

// Client-chosen event ids are base32hex at Google (letters a to v and digits).
const SERIES_ID = 'demoplanning01'

type EventTime = { dateTime: string, timeZone: string } | { date: string }

interface DemoEvent {
  id?: string
  summary?: string
  location?: string
  status?: 'cancelled'
  start?: EventTime
  end?: EventTime
  recurrence?: string[]
  recurringEventId?: string
  originalStartTime?: EventTime
}

/** The events of both calendars for a stack started at `now`, in the person's time zone. */
function demoEvents (now: DateTime): { primary: DemoEvent[], family: DemoEvent[] } {
  const zone = now.zoneName ?? 'UTC'
  const today = now.startOf('day')
  const at = (day: DateTime, hour: number, minute = 0): EventTime =>
    ({ dateTime: day.set({ hour, minute }).toISO({ suppressMilliseconds: true, includeOffset: false }) ?? '', timeZone: zone })
  const date = (day: DateTime): EventTime => ({ date: day.toISODate() ?? '' })
  // The series began two weeks ago on today's weekday, so today holds one of its occurrences.
  const seriesStart = today.minus({ weeks: 2 })
  return {
    primary: [
      { summary: 'Coffee with Sam', location: 'Corner café', start: at(today, 10), end: at(today, 10, 30) },
      { summary: 'Calendars in practice (conference)', start: date(today), end: date(today.plus({ days: 2 })) },
      {
        id: SERIES_ID,
        summary: 'Weekly planning',
        start: at(seriesStart, 14),
        end: at(seriesStart, 15),
        recurrence: ['RRULE:FREQ=WEEKLY;COUNT=10']
      },
      {
        recurringEventId: SERIES_ID,
        originalStartTime: at(today, 14),
        summary: 'Weekly planning (moved to 16:00)',
        start: at(today, 16),
        end: at(today, 17)
      },
      { recurringEventId: SERIES_ID, originalStartTime: at(today.plus({ weeks: 1 }), 14), status: 'cancelled' }
    ],
    family: [
      { summary: 'Dinner at home', start: at(today, 19), end: at(today, 20, 30) },
      { summary: 'Swimming lessons', start: at(today.plus({ days: 1 }), 17), end: at(today.plus({ days: 1 }), 18) }
    ]
  }
}

async function control<T> (origin: string, method: string, path: string, body: unknown): Promise<T> {
  const response = await fetch(`${origin}/_control${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body)
  })
  if (!response.ok) throw new Error(`the Google stand-in refused ${method} /_control${path}: ${response.status} ${await response.text()}`)
  return await response.json() as T
}

/** Creates the demo account with a primary and a second calendar, each holding a few events. */
export async function seedGoogleDemo (origin: string, now: DateTime = DateTime.now()): Promise<{ calendars: number, events: number }> {
  const zone = now.zoneName ?? 'UTC'
  const account = await control<{ calendars: Array<{ id: string, primary: boolean, summary: string }> }>(origin, 'POST', '/accounts', {
    ...DEMO_ACCOUNT,
    emailVerified: true,
    timeZone: zone,
    calendars: [{ summary: 'Family', timeZone: zone }]
  })
  const primary = account.calendars.find((calendar) => calendar.primary)
  const family = account.calendars.find((calendar) => !calendar.primary)
  if (primary === undefined || family === undefined) throw new Error('the Google stand-in did not create the demo calendars')
  const events = demoEvents(now)
  let inserted = 0
  for (const [calendar, list] of [[primary, events.primary], [family, events.family]] as const) {
    inserted += (await control<{ inserted: number }>(origin, 'POST', `/calendars/${encodeURIComponent(calendar.id)}/seed`, { events: list })).inserted
  }
  return { calendars: account.calendars.length, events: inserted }
}
