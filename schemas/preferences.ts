import { Type, type Static } from '@sinclair/typebox'

export const WEEK_STARTS = ['monday', 'sunday', 'saturday'] as const
export type WeekStart = typeof WEEK_STARTS[number]
const TIME_FORMATS = ['24h', '12h'] as const
export type TimeFormat = typeof TIME_FORMATS[number]

// A person's display preferences, kept with the account (GET/PUT /api/user/preferences) so every
// browser and device shows the calendar the same way. Every field is optional: what the account has
// not chosen, each client takes from the browser or device (its locale, its time zone).

const TIME = Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$|^24:00$', description: 'HH:mm, 24-hour; 24:00 is the end of the day' })

export const WorkingHours = Type.Object({
  start: TIME,
  end: TIME,
  days: Type.Array(Type.Integer({ minimum: 1, maximum: 7 }), {
    maxItems: 7,
    uniqueItems: true,
    description: 'Working weekdays, ISO numbers: 1 Monday ... 7 Sunday'
  })
}, { additionalProperties: false, description: 'Working hours, shaded in the day and week views; start before end' })

const ZONE_NAME = { minLength: 1, maxLength: 64 }

export const UserPreferences = Type.Object({
  weekStart: Type.Optional(Type.Union(WEEK_STARTS.map((day) => Type.Literal(day)), { description: 'The first day of a week in the week and month views' })),
  timeFormat: Type.Optional(Type.Union(TIME_FORMATS.map((format) => Type.Literal(format)), { description: 'Times as 14:00 (24h) or 2:00 PM (12h)' })),
  locale: Type.Optional(Type.String({ minLength: 2, maxLength: 35, pattern: '^[A-Za-z0-9-]+$', description: 'BCP 47 language tag for day and month names (de-DE); stored in its canonical form' })),
  timeZone: Type.Optional(Type.String({ ...ZONE_NAME, description: 'IANA time zone the calendar is shown in; stored under its current name (Asia/Calcutta is kept as Asia/Kolkata)' })),
  secondTimeZone: Type.Optional(Type.String({ ...ZONE_NAME, description: 'A second IANA time zone, shown as a second column of hours in the day and week views' })),
  workingHours: Type.Optional(WorkingHours),
  defaultEventMinutes: Type.Optional(Type.Integer({ minimum: 5, maximum: 1440, description: 'Length of a new event, in minutes' })),
  defaultReminderMinutes: Type.Optional(Type.Integer({ minimum: 0, maximum: 40320, description: 'Minutes before a new event its reminder comes (stored for clients; 0 is at the start)' })),
  calendarReminderMinutes: Type.Optional(Type.Record(Type.String({ pattern: '^.{1,500}$' }), Type.Integer({ minimum: 0, maximum: 40320 }), {
    maxProperties: 500,
    additionalProperties: false,
    description: 'A new event\'s reminder in a calendar, in minutes before it, by calendar key as in calendarColors; a calendar left out takes defaultReminderMinutes'
  })),
  calendarColors: Type.Optional(Type.Record(Type.String({ pattern: '^.{1,500}$' }), Type.String({ pattern: '^#[0-9a-f]{6}$' }), {
    maxProperties: 500,
    additionalProperties: false,
    description: 'Colours the person chose, by calendar key (`own` for the user\'s own calendar, else the calendarId its events carry), as #rrggbb'
  }))
}, { additionalProperties: false, description: 'Display preferences kept with the account; a field left out is the browser\'s or device\'s own' })

export type UserPreferences = Static<typeof UserPreferences>
export type WorkingHours = Static<typeof WorkingHours>
