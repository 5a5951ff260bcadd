// The preferences a view is drawn with: the account's choices (GET /api/user/preferences) over the
// browser's own (its language's week and clock, its time zone), and the geometry they give a day.
import type { DateTime } from 'luxon'
import { canonicalLocale, canonicalTimeZone, minutesOfTime, type TimeFormat, type WeekStart } from '../../../lib/preferences.js'
import type { UserPreferences, WorkingHours } from '../../../schemas/preferences.js'
import type { Reminder } from '../../../lib/events/reminders.js'

export interface Preferences {
  weekStart: WeekStart
  timeFormat: TimeFormat
  locale: string
  timeZone: string
  secondTimeZone: string | null
  workingHours: WorkingHours | null
  defaultEventMinutes: number
  defaultReminderMinutes: number | null
  /** A new event's reminder by calendar key, over defaultReminderMinutes. */
  calendarReminderMinutes: Readonly<Record<string, number>>
  calendarColors: Readonly<Record<string, string>>
}

/**
 * The reminders a new event in `calendar` starts with, whichever way it is made (the New event
 * form, quick add): that calendar's reminder chosen in Preferences, else the account's default
 * reminder; undefined leaves the calendar's own default at its provider.
 */
export function newEventReminders (preferences: Pick<Preferences, 'defaultReminderMinutes' | 'calendarReminderMinutes'>, calendar: string): Reminder[] | undefined {
  const minutes = preferences.calendarReminderMinutes[calendar] ?? preferences.defaultReminderMinutes
  return minutes === null ? undefined : [{ minutes }]
}

/** What a browser says of itself: `navigator.languages` and Intl's time zone. */
export interface BrowserFacts {
  languages: readonly string[]
  timeZone: string | undefined
}

interface WeekInfo { firstDay?: number }
type LocaleWithWeek = Intl.Locale & { getWeekInfo?: () => WeekInfo, weekInfo?: WeekInfo }

/** The first day of the week where `locale` is spoken (CLDR through Intl; Monday where unknown). */
function weekStartOf (locale: string): WeekStart {
  try {
    const tagged = new Intl.Locale(locale) as LocaleWithWeek
    const firstDay = (tagged.getWeekInfo?.() ?? tagged.weekInfo)?.firstDay
    return firstDay === 7 ? 'sunday' : firstDay === 6 ? 'saturday' : 'monday'
  } catch {
    return 'monday'
  }
}

/** The clock of `locale`: 12-hour where it writes 2 PM, else 24-hour. */
function timeFormatOf (locale: string): TimeFormat {
  const cycle = new Intl.DateTimeFormat(locale, { hour: 'numeric' }).resolvedOptions().hourCycle
  return cycle === 'h11' || cycle === 'h12' ? '12h' : '24h'
}

export function browserDefaults (facts: BrowserFacts): Preferences {
  const locale = facts.languages.map(canonicalLocale).find((tag): tag is string => tag !== null) ?? 'en-GB'
  return {
    weekStart: weekStartOf(locale),
    timeFormat: timeFormatOf(locale),
    locale,
    timeZone: canonicalTimeZone(facts.timeZone ?? 'UTC') ?? 'UTC',
    secondTimeZone: null,
    workingHours: null,
    defaultEventMinutes: 60,
    defaultReminderMinutes: null,
    calendarReminderMinutes: {},
    calendarColors: {}
  }
}

/** The account's (or this browser's) choices over the browser's own; a name Intl does not know is left out. */
export function effectivePreferences (stored: UserPreferences, defaults: Preferences): Preferences {
  const zone = stored.timeZone === undefined ? null : canonicalTimeZone(stored.timeZone)
  const second = stored.secondTimeZone === undefined ? null : canonicalTimeZone(stored.secondTimeZone)
  const locale = stored.locale === undefined ? null : canonicalLocale(stored.locale)
  return {
    weekStart: stored.weekStart ?? defaults.weekStart,
    timeFormat: stored.timeFormat ?? defaults.timeFormat,
    locale: locale ?? defaults.locale,
    timeZone: zone ?? defaults.timeZone,
    secondTimeZone: second,
    workingHours: stored.workingHours ?? null,
    defaultEventMinutes: stored.defaultEventMinutes ?? defaults.defaultEventMinutes,
    defaultReminderMinutes: stored.defaultReminderMinutes ?? null,
    calendarReminderMinutes: stored.calendarReminderMinutes ?? {},
    calendarColors: stored.calendarColors ?? {}
  }
}

/** What the Preferences dialog stores: every choice it shows, so other devices show the same. */
export function storedOf (preferences: Preferences): UserPreferences {
  return {
    weekStart: preferences.weekStart,
    timeFormat: preferences.timeFormat,
    locale: preferences.locale,
    timeZone: preferences.timeZone,
    ...(preferences.secondTimeZone === null ? {} : { secondTimeZone: preferences.secondTimeZone }),
    ...(preferences.workingHours === null ? {} : { workingHours: preferences.workingHours }),
    defaultEventMinutes: preferences.defaultEventMinutes,
    ...(preferences.defaultReminderMinutes === null ? {} : { defaultReminderMinutes: preferences.defaultReminderMinutes }),
    ...(Object.keys(preferences.calendarReminderMinutes).length === 0 ? {} : { calendarReminderMinutes: { ...preferences.calendarReminderMinutes } }),
    ...(Object.keys(preferences.calendarColors).length === 0 ? {} : { calendarColors: { ...preferences.calendarColors } })
  }
}

/** The working hours of `day` in minutes from its midnight, or null on a day off (or with none chosen). */
export function workingBand (hours: WorkingHours | null, day: DateTime): { top: number, height: number } | null {
  if (hours === null || !hours.days.includes(day.weekday)) return null
  const top = minutesOfTime(hours.start)
  return { top, height: minutesOfTime(hours.end) - top }
}
