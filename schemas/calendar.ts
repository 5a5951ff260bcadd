import { Type, type Static } from '@sinclair/typebox'
import { ConnectionIdSchema, providerRemindersSchema, ProviderSchema } from './sync/common.js'

// The user's provider calendars as a client lists them (GET /api/calendars): what the Sync service
// knows of each connection's calendars. The user's own calendar (events without a calendarId) is
// not a provider calendar and is not listed.
export const CalendarView = Type.Object({
  connectionId: ConnectionIdSchema,
  provider: ProviderSchema,
  calendarId: Type.String({ minLength: 1, maxLength: 500, description: 'The calendarId the calendar\'s events carry' }),
  name: Type.String({ maxLength: 1024, description: 'The calendar\'s name at the provider (the user\'s own name for it at Google, when set)' }),
  color: Type.String({ pattern: '^#[0-9a-f]{6}$', description: 'The calendar\'s colour at the provider as #rrggbb, or the provider\'s own colour when it names none' }),
  primary: Type.Boolean({ description: 'The account\'s main calendar: where the user\'s own events are written' }),
  defaultReminders: providerRemindersSchema('What an event of this calendar whose `reminders` are absent reminds of, in minutes before its start: the calendar\'s default at the provider (Google keeps one per calendar); empty when it has none')
}, { additionalProperties: false })

export const CalendarListView = Type.Object({
  calendars: Type.Array(CalendarView, { description: 'Calendars of the user\'s live connections, by connection, primary first, then by name' })
}, { additionalProperties: false })

// Which calendars the user hid in the list: kept with the account, so every browser and device
// shows the same choice. `own` is the user's own calendar; any other key is a provider calendarId.
const HIDDEN_CALENDARS_MAX = 500
export const HiddenCalendarsView = Type.Object({
  hidden: Type.Array(Type.String({ minLength: 1, maxLength: 500 }), {
    maxItems: HIDDEN_CALENDARS_MAX,
    uniqueItems: true,
    description: 'Keys of the hidden calendars: `own` for the user\'s own calendar, else the calendarId its events carry'
  })
}, { additionalProperties: false })

export type CalendarView = Static<typeof CalendarView>
export type HiddenCalendarsView = Static<typeof HiddenCalendarsView>
export type CalendarListView = Static<typeof CalendarListView>
