// The calendar list a client shows (GET /api/calendars), from what the Sync service keeps of each
// connection's calendars: every calendar has a colour (the provider's own when the calendar names
// none), and each connection lists its primary calendar first, then the rest by name.
import type { SyncCalendar, SyncCalendarList } from '../schemas/sync/index.js'
import type { CalendarListView, CalendarView } from '../schemas/calendar.js'

/** The colour a provider draws a calendar in when the calendar names none. */
const PROVIDER_COLORS: Record<SyncCalendar['provider'], string> = {
  google: '#039be5',
  microsoft: '#0078d4',
  caldav: '#8e8e93'
}

export function calendarList (synced: SyncCalendarList): CalendarListView {
  const order = new Map<string, number>()
  for (const calendar of synced.calendars) if (!order.has(calendar.connectionId)) order.set(calendar.connectionId, order.size)
  const calendars: CalendarView[] = synced.calendars.map((calendar) => ({
    connectionId: calendar.connectionId,
    provider: calendar.provider,
    calendarId: calendar.calendarId,
    name: calendar.name === '' ? calendar.calendarId : calendar.name,
    color: calendar.color ?? PROVIDER_COLORS[calendar.provider],
    primary: calendar.primary,
    defaultReminders: calendar.defaultReminders ?? []
  }))
  return {
    calendars: calendars.sort((a, b) =>
      (order.get(a.connectionId) ?? 0) - (order.get(b.connectionId) ?? 0) ||
      Number(b.primary) - Number(a.primary) ||
      a.name.localeCompare(b.name))
  }
}
