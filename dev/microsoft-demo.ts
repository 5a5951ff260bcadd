// The demo Microsoft account of the local stack. The Microsoft stand-in forgets everything when it
// stops, so the local stack creates the account and its Outlook calendar again at every start,
// through the stand-in's control API (the same surface tests use to act as the person's other
// devices). The events sit around the day the stack starts, so the import after a "Continue with
// Microsoft" has something to show today.
import { DateTime } from 'luxon'

// Its own address, not the Google demo's: signing in with both shows two people, not one account
// that silently gained a second provider.
export const MICROSOFT_DEMO_ACCOUNT = { email: 'outlook-demo@example.com', name: 'Outlook Demo' } as const

interface GraphTime { dateTime: string, timeZone: string }

interface DemoGraphEvent {
  subject: string
  location?: { displayName: string }
  isAllDay?: boolean
  start: GraphTime
  end: GraphTime
  recurrence?: {
    pattern: { type: 'weekly', interval: number, daysOfWeek: string[] }
    range: { type: 'numbered', startDate: string, numberOfOccurrences: number }
  }
}

// Graph names weekdays in English lower case; luxon numbers them from Monday (1) to Sunday (7).
const GRAPH_WEEKDAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday']

/** The events of the default calendar for a stack started at `now`, in the person's time zone. */
function microsoftDemoEvents (now: DateTime): DemoGraphEvent[] {
  const zone = now.zoneName ?? 'UTC'
  const today = now.startOf('day')
  const at = (day: DateTime, hour: number, minute = 0): GraphTime =>
    ({ dateTime: day.set({ hour, minute }).toISO({ suppressMilliseconds: true, includeOffset: false }) ?? '', timeZone: zone })
  // The series began a week ago on today's weekday, so today holds one of its occurrences.
  const seriesStart = today.minus({ weeks: 1 })
  return [
    {
      subject: 'Team stand-up (Outlook)',
      start: at(seriesStart, 9),
      end: at(seriesStart, 9, 15),
      recurrence: {
        pattern: { type: 'weekly', interval: 1, daysOfWeek: [GRAPH_WEEKDAYS[seriesStart.weekday - 1] ?? 'monday'] },
        range: { type: 'numbered', startDate: seriesStart.toISODate() ?? '', numberOfOccurrences: 8 }
      }
    },
    { subject: 'Lunch with Alex', location: { displayName: 'Canteen' }, start: at(today, 12, 30), end: at(today, 13, 30) },
    // Graph's all-day events run from midnight to midnight in their zone.
    { subject: 'Company offsite', isAllDay: true, start: at(today.plus({ days: 1 }), 0), end: at(today.plus({ days: 2 }), 0) },
    { subject: 'Dentist', start: at(today.plus({ days: 2 }), 16), end: at(today.plus({ days: 2 }), 17) }
  ]
}

async function control<T> (origin: string, method: string, path: string, body: unknown): Promise<T> {
  const response = await fetch(`${origin}/_control${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body)
  })
  if (!response.ok) throw new Error(`the Microsoft stand-in refused ${method} /_control${path}: ${response.status} ${await response.text()}`)
  return await response.json() as T
}

/** Creates the demo account (a personal one) whose default calendar holds a few events. */
export async function seedMicrosoftDemo (origin: string, now: DateTime = DateTime.now()): Promise<{ events: number }> {
  const account = await control<{ calendars: Array<{ id: string, isDefaultCalendar: boolean }> }>(origin, 'POST', '/accounts', {
    ...MICROSOFT_DEMO_ACCOUNT,
    timeZone: now.zoneName ?? 'UTC'
  })
  const calendar = account.calendars.find((entry) => entry.isDefaultCalendar)
  if (calendar === undefined) throw new Error('the Microsoft stand-in did not create the demo account\'s default calendar')
  const seeded = await control<{ inserted: number }>(origin, 'POST', `/calendars/${encodeURIComponent(calendar.id)}/seed`, { events: microsoftDemoEvents(now) })
  return { events: seeded.inserted }
}
