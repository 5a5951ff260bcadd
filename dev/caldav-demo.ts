// The demo CalDAV account of the local stack, on the Radicale it runs when Debian's package is
// installed. Radicale keeps its data, so the calendar and its events are made on the first start
// only; what a person changes there afterwards stays.
import { DateTime } from 'luxon'
import type { Radicale } from './radicale.js'

export const CALDAV_DEMO_USER = 'demo'

function ics (uid: string, lines: string[]): string {
  const stamp = DateTime.utc().toFormat("yyyyMMdd'T'HHmmss'Z'")
  return ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//calendar-service//local stack//EN', 'BEGIN:VEVENT', `UID:${uid}`, `DTSTAMP:${stamp}`, ...lines, 'END:VEVENT', 'END:VCALENDAR', ''].join('\r\n')
}

/** Creates the demo user's calendar with a few events around `now`, unless it exists already. */
export async function seedCalDavDemo (radicale: Radicale, password: string, now = DateTime.utc()): Promise<void> {
  await radicale.setPassword(CALDAV_DEMO_USER, password)
  const existing = await radicale.get(`${radicale.url}/${CALDAV_DEMO_USER}/personal/`, CALDAV_DEMO_USER, password)
  if (existing.status !== 404) return
  const calendar = await radicale.createCalendar(CALDAV_DEMO_USER, password, 'personal', 'Personal (CalDAV)')
  const utc = (day: DateTime, hour: number): string => day.set({ hour, minute: 0, second: 0, millisecond: 0 }).toUTC().toFormat("yyyyMMdd'T'HHmmss'Z'")
  const today = now.startOf('day')
  const events: Array<[string, string[]]> = [
    ['demo-yoga', [`DTSTART:${utc(today, 17)}`, `DTEND:${utc(today, 18)}`, 'SUMMARY:Yoga', 'RRULE:FREQ=WEEKLY;COUNT=12']],
    ['demo-dinner', [`DTSTART:${utc(today.plus({ days: 1 }), 19)}`, `DTEND:${utc(today.plus({ days: 1 }), 21)}`, 'SUMMARY:Dinner with friends', 'LOCATION:Home']],
    ['demo-trip', [`DTSTART;VALUE=DATE:${today.plus({ days: 3 }).toFormat('yyyyMMdd')}`, `DTEND;VALUE=DATE:${today.plus({ days: 5 }).toFormat('yyyyMMdd')}`, 'SUMMARY:Weekend trip']]
  ]
  for (const [uid, lines] of events) {
    const put = await radicale.put(`${calendar}${uid}.ics`, CALDAV_DEMO_USER, password, ics(uid, lines))
    if (put.status !== 201) throw new Error(`the CalDAV demo event ${uid} was refused with ${put.status}`)
  }
}
