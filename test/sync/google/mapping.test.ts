// The pure rules between Google events and the backend's event content.
import { test } from 'tap'
import {
  calendarDefaultRemindersOf, classifyFailure, contentOf, googleFieldsOf, insertIdFor, instanceId, toProviderEvent
} from '../../../sync/lib/providers/google-mapping.js'
import { importWindow, providerVersionWins, watchAction, WATCH_LIFETIME_MS } from '../../../sync/lib/provider-sync.js'

test('a timed event keeps its zone; an all-day event takes the calendar\'s', async (t) => {
  t.same(contentOf({
    summary: 'Standup',
    start: { dateTime: '2026-11-21T10:00:00+01:00', timeZone: 'Europe/Berlin' },
    end: { dateTime: '2026-11-21T10:15:00+01:00', timeZone: 'Europe/Berlin' }
  }, 'UTC'), { title: 'Standup', startDate: '2026-11-21T10:00:00+01:00', endDate: '2026-11-21T10:15:00+01:00', isAllDay: false, timeZone: 'Europe/Berlin' })
  t.same(contentOf({ summary: 'Holiday', description: 'off', location: 'home', start: { date: '2026-12-24' }, end: { date: '2026-12-27' } }, 'Europe/Paris'),
    { title: 'Holiday', description: 'off', location: 'home', startDate: '2026-12-24', endDate: '2026-12-27', isAllDay: true, timeZone: 'Europe/Paris' })
  t.equal(contentOf({ summary: 'no end', start: { date: '2026-12-24' } }, 'UTC'), null)
})

test('series, exceptions and cancelled items become provider events', async (t) => {
  t.same(toProviderEvent({
    id: 'series1',
    iCalUID: 'series1@google.com',
    etag: '"12"',
    updated: '2026-11-20T08:00:00.000Z',
    status: 'confirmed',
    summary: 'Weekly',
    start: { dateTime: '2026-11-02T09:00:00+01:00', timeZone: 'Europe/Berlin' },
    end: { dateTime: '2026-11-02T10:00:00+01:00', timeZone: 'Europe/Berlin' },
    recurrence: ['RRULE:FREQ=WEEKLY;COUNT=10', 'EXDATE;TZID=Europe/Berlin:20261109T090000'],
    extendedProperties: { private: { calendarEventId: 'ours-1' } }
  }, 'UTC'), {
    providerEventId: 'series1',
    iCalUID: 'series1@google.com',
    etag: '"12"',
    updated: '2026-11-20T08:00:00.000Z',
    status: 'confirmed',
    content: {
      title: 'Weekly',
      startDate: '2026-11-02T09:00:00+01:00',
      endDate: '2026-11-02T10:00:00+01:00',
      isAllDay: false,
      timeZone: 'Europe/Berlin',
      recurrence: ['RRULE:FREQ=WEEKLY;COUNT=10', 'EXDATE;TZID=Europe/Berlin:20261109T090000']
    },
    eventId: 'ours-1'
  })
  t.same(toProviderEvent({
    id: 'series1_20261116T080000Z', status: 'cancelled', recurringEventId: 'series1', originalStartTime: { dateTime: '2026-11-16T09:00:00+01:00' }, updated: '2026-11-21T08:00:00Z'
  }, 'UTC'), {
    providerEventId: 'series1_20261116T080000Z',
    updated: '2026-11-21T08:00:00.000Z',
    status: 'cancelled',
    recurringEventId: 'series1',
    originalStartDate: '2026-11-16T09:00:00+01:00'
  }, 'a cancelled occurrence carries no content')
  t.same(toProviderEvent({
    id: 'series1_20261109T080000Z',
    status: 'confirmed',
    recurringEventId: 'series1',
    originalStartTime: { dateTime: '2026-11-09T09:00:00+01:00', timeZone: 'Europe/Berlin' },
    updated: '2026-11-21T08:00:00Z',
    summary: 'Weekly',
    start: { dateTime: '2026-11-09T12:00:00+01:00', timeZone: 'Europe/Berlin' },
    end: { dateTime: '2026-11-09T13:00:00+01:00', timeZone: 'Europe/Berlin' },
    // Google copies the master's private properties onto its instances.
    extendedProperties: { private: { calendarEventId: 'ours-1' } }
  }, 'UTC')?.eventId, undefined, 'an exception does not carry its master\'s id as its own')
  t.equal(toProviderEvent({ status: 'confirmed' }, 'UTC'), null, 'no id, no event')
  t.equal(toProviderEvent({ id: 'x', status: 'confirmed', start: { date: '2026-01-01' } }, 'UTC'), null, 'a live event without an end is skipped')
})

test('`updated` reaches the backend as a UTC instant with milliseconds, whatever form Google gave', async (t) => {
  const updatedOf = (updated: string | undefined) => toProviderEvent({ id: 'e', status: 'cancelled', ...(updated === undefined ? {} : { updated }) }, 'UTC')?.updated
  t.equal(updatedOf('2026-11-20T08:00:00.123Z'), '2026-11-20T08:00:00.123Z')
  t.equal(updatedOf('2026-11-20T08:00:00Z'), '2026-11-20T08:00:00.000Z')
  t.equal(updatedOf('2026-11-20T09:00:00.5+01:00'), '2026-11-20T08:00:00.500Z')
  t.equal(updatedOf('2026-11-20T24:00:00.000Z'), '2026-11-21T00:00:00.000Z', 'the end of a day is the next day\'s start')
  t.equal(updatedOf('2024-02-29T10:00:00.000Z'), '2024-02-29T10:00:00.000Z')
  for (const unreadable of ['2026-02-30T08:00:00.000Z', '2026-11-20T25:00:00.000Z', '2026-11-20T08:60:00.000Z', 'yesterday', '', undefined]) {
    t.equal(updatedOf(unreadable), '1970-01-01T00:00:00.000Z', `${String(unreadable)}: the epoch`)
  }
})

test('our content as Google fields; instance and insert ids', async (t) => {
  t.same(googleFieldsOf({ title: 'A', startDate: '2026-11-21', endDate: '2026-11-22', isAllDay: true, timeZone: 'UTC' }), {
    summary: 'A', description: null, location: null, reminders: { useDefault: true, overrides: [] }, colorId: null, start: { date: '2026-11-21', dateTime: null, timeZone: null }, end: { date: '2026-11-22', dateTime: null, timeZone: null }, recurrence: null
  })
  t.match(googleFieldsOf({ title: 'B', startDate: '2026-11-21T10:00:00+01:00', endDate: '2026-11-21T11:00:00+01:00', isAllDay: false, timeZone: 'Europe/Berlin', recurrence: ['RRULE:FREQ=DAILY'] }), {
    start: { dateTime: '2026-11-21T10:00:00+01:00', timeZone: 'Europe/Berlin', date: null }, recurrence: ['RRULE:FREQ=DAILY']
  })
  t.equal(instanceId('abc', '2026-11-16T09:00:00+01:00'), 'abc_20261116T080000Z')
  t.equal(instanceId('abc', '2026-11-16'), 'abc_20261116')
  const id = insertIdFor('c1', 'e1')
  t.match(id, /^[0-9a-v]{32}$/, 'base32hex, as Google requires')
  t.equal(insertIdFor('c1', 'e1'), id, 'the same on every attempt')
  t.not(insertIdFor('c2', 'e1'), id)
})

test('reminders: popup overrides both ways, the default as absent, Google\'s email reminders kept', async (t) => {
  const event = (reminders: unknown) => contentOf({ summary: 'R', start: { date: '2026-12-24' }, end: { date: '2026-12-25' }, reminders } as Parameters<typeof contentOf>[0], 'UTC')
  t.equal(event({ useDefault: true })?.reminders, undefined, 'the calendar\'s default is no list of our own')
  t.equal(event(undefined)?.reminders, undefined, 'nor is an event that says nothing')
  t.same(event({ useDefault: false, overrides: [{ method: 'popup', minutes: 30 }, { method: 'email', minutes: 1440 }, { method: 'popup', minutes: 10 }] })?.reminders,
    [{ minutes: 10 }, { minutes: 30 }], 'the popups, nearest the start first; an email is no notification shown here')
  t.same(event({ useDefault: false })?.reminders, [], 'no default and no overrides: none')
  const content = { title: 'R', startDate: '2026-12-24', endDate: '2026-12-25', isAllDay: true, timeZone: 'UTC' }
  t.same(googleFieldsOf({ ...content, reminders: [{ minutes: 60 }, { minutes: 5 }] }).reminders, { useDefault: false, overrides: [{ method: 'popup', minutes: 5 }, { method: 'popup', minutes: 60 }] })
  t.same(googleFieldsOf({ ...content, reminders: [] }).reminders, { useDefault: false, overrides: [] }, 'none is no default either')
  t.same(googleFieldsOf(content).reminders, { useDefault: true, overrides: [] }, 'absent is the default; overrides emptied, since a patch merges the object')
  const current = { reminders: { useDefault: false, overrides: [{ method: 'email', minutes: 1440 }, { method: 'popup', minutes: 15 }] } }
  t.same(googleFieldsOf({ ...content, reminders: [{ minutes: 10 }] }, current).reminders,
    { useDefault: false, overrides: [{ method: 'popup', minutes: 10 }, { method: 'email', minutes: 1440 }] }, 'the email reminder at Google stays; the popups are ours')
  t.same(googleFieldsOf({ ...content, reminders: [1, 2, 3, 4, 5].map((minutes) => ({ minutes })) }, current).reminders?.overrides?.length, 5, 'never more than Google\'s 5')
})

test('a calendar\'s default reminders: its popups, nearest the start first, each once; none when it has no popup', async (t) => {
  t.same(calendarDefaultRemindersOf([{ method: 'popup', minutes: 30 }, { method: 'email', minutes: 10 }, { method: 'popup', minutes: 5 }, { method: 'popup', minutes: 30 }]),
    { defaultReminders: [{ minutes: 5 }, { minutes: 30 }] })
  t.same(calendarDefaultRemindersOf([{ method: 'email', minutes: 10 }]), {}, 'an email is Google\'s to send')
  t.same(calendarDefaultRemindersOf([{ method: 'popup', minutes: -1 }, { method: 'popup', minutes: 40_321 }, { method: 'popup' }]), {}, 'nothing out of range or without minutes')
  t.same(calendarDefaultRemindersOf([]), {})
  t.same(calendarDefaultRemindersOf(undefined), {}, 'a calendar Google lists without the field')
})

test('colour: Google\'s colorId 1 to 11 both ways, none as the calendar\'s', async (t) => {
  const event = (colorId: unknown) => contentOf({ summary: 'C', start: { date: '2026-12-24' }, end: { date: '2026-12-25' }, colorId } as Parameters<typeof contentOf>[0], 'UTC')
  t.equal(event('1')?.color, 'lavender')
  t.equal(event('9')?.color, 'blueberry')
  t.equal(event('11')?.color, 'tomato')
  for (const none of [undefined, null, '', '0', '12']) t.notOk(event(none) !== null && 'color' in (event(none) ?? {}), `colorId ${String(none)}: the calendar's colour`)
  const content = { title: 'C', startDate: '2026-12-24', endDate: '2026-12-25', isAllDay: true, timeZone: 'UTC' }
  t.equal(googleFieldsOf({ ...content, color: 'basil' }).colorId, '10')
  t.equal(googleFieldsOf({ ...content, color: 'sage' }).colorId, '2')
  t.equal(googleFieldsOf(content).colorId, null, 'absent clears Google\'s: a patch merges')
  const names = ['lavender', 'sage', 'grape', 'flamingo', 'banana', 'tangerine', 'peacock', 'graphite', 'blueberry', 'basil', 'tomato'] as const
  t.same(names.map((color) => googleFieldsOf({ ...content, color }).colorId), ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11'], 'Google\'s palette order')
  t.same(names.map((color) => event(googleFieldsOf({ ...content, color }).colorId)?.color), names, 'each read back as written')
})

test('what a failed Google call means', async (t) => {
  t.equal(classifyFailure({ status: 400, reason: null, oauthError: 'invalid_grant' }), 'revoked')
  t.equal(classifyFailure({ status: 410, reason: 'fullSyncRequired', oauthError: null }), 'cursorExpired')
  t.equal(classifyFailure({ status: 429, reason: 'rateLimitExceeded', oauthError: null }), 'unavailable')
  t.equal(classifyFailure({ status: 403, reason: 'rateLimitExceeded', oauthError: null }), 'unavailable')
  t.equal(classifyFailure({ status: 403, reason: 'insufficientPermissions', oauthError: null }), 'other')
  t.equal(classifyFailure({ status: 503, reason: 'backendError', oauthError: null }), 'unavailable')
  t.equal(classifyFailure({ status: null, reason: null, oauthError: null }), 'unavailable', 'no answer at all')
  t.equal(classifyFailure({ status: 404, reason: 'notFound', oauthError: null }), 'notFound')
  t.equal(classifyFailure({ status: 410, reason: 'deleted', oauthError: null }), 'gone')
  t.equal(classifyFailure({ status: 412, reason: 'conditionNotMet', oauthError: null }), 'conflict')
})

test('import window, watch maintenance and the newer version', async (t) => {
  const now = new Date('2026-11-21T09:00:00Z')
  const window = importWindow(now)
  t.ok(window.from < now && window.to > now)
  const soon = { expiresAt: new Date(now.getTime() + 60 * 60_000) }
  const later = { expiresAt: new Date(now.getTime() + 3 * 24 * 60 * 60_000) }
  t.equal(watchAction(later, now, now, 30), 'keep')
  t.equal(watchAction(soon, new Date(now.getTime() - 24 * 60 * 60_000), now, 30), 'renew')
  t.equal(watchAction(soon, new Date(now.getTime() - 31 * 24 * 60 * 60_000), now, 30), 'stop')
  t.equal(watchAction(soon, null, now, 30), 'renew', 'never seen: counted from the channel\'s creation')
  t.equal(watchAction({ expiresAt: new Date(now.getTime() - 40 * 24 * 60 * 60_000 + WATCH_LIFETIME_MS) }, null, now, 30), 'stop')
  t.equal(providerVersionWins('2026-11-21T09:00:01Z', '2026-11-21T09:00:00.000Z'), true)
  t.equal(providerVersionWins('2026-11-21T09:00:00Z', '2026-11-21T09:00:00.000Z'), false, 'a tie keeps the backend\'s change')
})
