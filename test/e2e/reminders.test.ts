import { test } from 'tap'
import { waitUntil } from '../processes.js'
import { radicaleMissing, startRadicale } from '../sync/caldav/radicale.js'
import { mintEventId } from '../../lib/events/ids.js'
import { planEdit, type EventDraft } from '../../web/src/lib/series-edit.js'
import type { CalendarEvent } from '../../web/src/lib/events.js'
import { sendPlan } from '../web-plans.js'
import { connectAllThree, startFullStack, userWithGoogleAccount, withMicrosoft } from './stack.js'

// An event's reminders through the whole system, for Google, Microsoft and a CalDAV server connected
// to one user: a reminder at the provider is imported; one set here (a new event, then an edit as the
// web client's dialog sends it) is at the provider in its terms (Google's popup override, Graph's
// reminderMinutesBeforeStart, a DISPLAY VALARM); one changed at the provider arrives here.

const USER = 'rhea'
const PASSWORD = 'rhea-app-password'
const RANGE = 'start=2026-11-30T00:00:00Z&end=2026-12-07T00:00:00Z'

function draftOf (event: CalendarEvent, reminders: Array<{ minutes: number }>): EventDraft {
  return { title: event.title, description: '', location: '', isAllDay: event.isAllDay, startDate: event.startDate, endDate: event.endDate, timeZone: event.timeZone, frequency: null, reminders }
}

test('reminders both ways with Google, Microsoft and CalDAV', { skip: radicaleMissing() ?? false }, async (t) => {
  const stack = withMicrosoft(await startFullStack(t, { microsoft: true }))
  const radicale = await startRadicale(t)
  await radicale.setPassword(USER, PASSWORD)
  const calendarUrl = await radicale.createCalendar(USER, PASSWORD, 'home', 'Home')
  const user = await userWithGoogleAccount(stack, 'reminders')
  const google = stack.google.control
  google.insertEvent(user.email, {
    summary: 'Dentist (Google)',
    start: { dateTime: '2026-12-01T09:00:00+01:00', timeZone: 'Europe/Berlin' },
    end: { dateTime: '2026-12-01T10:00:00+01:00', timeZone: 'Europe/Berlin' },
    reminders: { useDefault: false, overrides: [{ method: 'popup', minutes: 15 }, { method: 'email', minutes: 1440 }] }
  })
  // The person's own default for the calendar in Google Calendar's settings, and an event keeping it.
  google.setDefaultReminders(user.email, [{ method: 'popup', minutes: 30 }, { method: 'email', minutes: 60 }, { method: 'popup', minutes: 5 }])
  google.insertEvent(user.email, {
    summary: 'Lunch (Google default)',
    start: { dateTime: '2026-12-02T12:00:00+01:00', timeZone: 'Europe/Berlin' },
    end: { dateTime: '2026-12-02T13:00:00+01:00', timeZone: 'Europe/Berlin' }
  })
  stack.microsoft.control.createAccount({ email: user.email, name: 'reminders', timeZone: 'W. Europe Standard Time' })
  const app = stack.backend.app
  const { range, read, settled, refreshed, atGoogle, atMicrosoft, atRadicale, microsoftCalendar } = await connectAllThree(t, stack, user, radicale, { username: USER, password: PASSWORD }, RANGE)

  await t.test('an import keeps the provider\'s reminders', async (t) => {
    await refreshed(async () => (await range()).some((event) => event.title === 'Dentist (Google)'), 'the Google event imported')
    t.same((await range()).find((event) => event.title === 'Dentist (Google)')?.reminders, [{ minutes: 15 }], 'the popup is a reminder; the email one is not shown here')
  })

  await t.test('Google\'s default reminders of a calendar: listed with the calendar, kept by its events', async (t) => {
    await refreshed(async () => (await range()).some((event) => event.title === 'Lunch (Google default)'), 'the event keeping the default imported')
    const lunch = (await range()).find((event) => event.title === 'Lunch (Google default)')
    t.equal(lunch?.reminders, undefined, 'the event keeps the calendar\'s default: its reminders are absent')
    const { calendars } = (await app.inject({ method: 'GET', url: '/api/calendars', headers: user.headers })).json<{ calendars: Array<{ provider: string, calendarId: string, defaultReminders: Array<{ minutes: number }> }> }>()
    t.same(calendars.map((calendar) => [calendar.provider, calendar.defaultReminders]), [
      ['google', [{ minutes: 5 }, { minutes: 30 }]],
      ['microsoft', []],
      ['caldav', []]
    ], 'the popups of Google\'s default, in order; Outlook and CalDAV keep no default per calendar')
  })

  const create = async (title: string, calendarId: string) => {
    const id = mintEventId()
    const answer = await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: id, title, startDate: '2026-12-03T10:00:00Z', endDate: '2026-12-03T11:00:00Z', timeZone: 'Europe/Berlin', calendarId, reminders: [{ minutes: 10 }] } })
    t.equal(answer.statusCode, 204, `${title}: ${answer.body}`)
    return id
  }
  const inGoogle = await create('Standup (Google)', user.email)
  const inOutlook = await create('Review (Outlook)', microsoftCalendar)
  const inCaldav = await create('Choir (CalDAV)', calendarUrl)
  await waitUntil(async () => (await Promise.all([inGoogle, inOutlook, inCaldav].map(read))).every((event) => event.providerEventId !== undefined) && await settled(), 'all three written and linked', 30_000)
  const providerIdOf = async (id: string) => (await read(id)).providerEventId as string

  await t.test('a reminder set here is at each provider in its terms', async (t) => {
    t.same(atGoogle(await providerIdOf(inGoogle))['reminders'], { useDefault: false, overrides: [{ method: 'popup', minutes: 10 }] }, 'Google: a popup override')
    t.match(atMicrosoft(await providerIdOf(inOutlook)), { isReminderOn: true, reminderMinutesBeforeStart: 10 }, 'Graph: its one reminder')
    t.match((await atRadicale(await providerIdOf(inCaldav))).body, /BEGIN:VALARM\r\nACTION:DISPLAY\r\nDESCRIPTION:Choir \(CalDAV\)\r\nTRIGGER;RELATED=START:-PT10M\r\nEND:VALARM/, 'CalDAV: a DISPLAY alarm 10 minutes before the start')
  })

  await t.test('an edit here, as the dialog sends it, writes the new reminders out', async (t) => {
    for (const id of [inGoogle, inOutlook, inCaldav]) {
      const event = await read(id)
      t.same(await sendPlan(app, user.headers, planEdit(event, draftOf(event, [{ minutes: 60 }]), 'all', null, mintEventId())), [204])
    }
    await waitUntil(settled, 'the edits written', 30_000)
    t.same(atGoogle(await providerIdOf(inGoogle))['reminders'], { useDefault: false, overrides: [{ method: 'popup', minutes: 60 }] })
    t.match(atMicrosoft(await providerIdOf(inOutlook)), { isReminderOn: true, reminderMinutesBeforeStart: 60 })
    const ics = (await atRadicale(await providerIdOf(inCaldav))).body
    t.match(ics, /TRIGGER;RELATED=START:-PT1H/)
    t.notMatch(ics, /-PT10M/, 'the old alarm replaced')
  })

  await t.test('a reminder changed at each provider arrives here', async (t) => {
    google.patchEvent(user.email, await providerIdOf(inGoogle), { reminders: { useDefault: false, overrides: [{ method: 'popup', minutes: 45 }] } })
    stack.microsoft.control.patchEvent(microsoftCalendar, await providerIdOf(inOutlook), { isReminderOn: false })
    const resource = await atRadicale(await providerIdOf(inCaldav))
    const changed = resource.body.replace('TRIGGER;RELATED=START:-PT1H', 'TRIGGER:-P1D').replace(/LAST-MODIFIED:\d{8}T\d{6}Z/, `LAST-MODIFIED:${new Date(Date.now() + 2000).toISOString().replace(/[-:]|\.\d{3}/g, '')}`)
    t.ok([201, 204].includes((await radicale.put(new URL(await providerIdOf(inCaldav), radicale.url).toString(), USER, PASSWORD, changed, resource.etag === null ? {} : { 'if-match': resource.etag })).status), 'another CalDAV client changed the alarm')
    await refreshed(async () => {
      const [g, m, c] = await Promise.all([inGoogle, inOutlook, inCaldav].map(read))
      return g?.reminders?.[0]?.minutes === 45 && m?.reminders?.length === 0 && c?.reminders?.[0]?.minutes === 1440
    }, 'the three changes here')
    const [g, m, c] = await Promise.all([inGoogle, inOutlook, inCaldav].map(read))
    t.same(g?.reminders, [{ minutes: 45 }], 'Google\'s new popup')
    t.same(m?.reminders, [], 'Outlook\'s reminder turned off: none')
    t.same(c?.reminders, [{ minutes: 1440 }], 'the CalDAV alarm a day before')
  })
})
