// The rules of a person's display preferences, shared by the backend (which validates what it
// stores) and the web client (which fills in what the account has not chosen): time zone and locale
// names as Intl knows them, working hours, and the calendar colour palette with its defaults.

import type { WeekStart } from '../schemas/preferences.js'
export { WEEK_STARTS, type TimeFormat, type WeekStart } from '../schemas/preferences.js'

/** Luxon's and ISO's weekday number (Monday 1 ... Sunday 7) a week starts on. */
export const WEEK_START_DAY: Record<WeekStart, 1 | 6 | 7> = { monday: 1, saturday: 6, sunday: 7 }

/**
 * CLDR's `iana` names of the zones ICU (so Intl in Node and Chromium) still calls by an old name:
 * Intl resolves "Asia/Kolkata" to "Asia/Calcutta". A person expects the zone's current name, so
 * every name read back from Intl goes through this table (from CLDR's bcp47/timezone.xml).
 */
const CURRENT_ZONE_NAMES: Readonly<Record<string, string>> = {
  'Africa/Asmera': 'Africa/Asmara',
  'America/Buenos_Aires': 'America/Argentina/Buenos_Aires',
  'America/Catamarca': 'America/Argentina/Catamarca',
  'America/Coral_Harbour': 'America/Atikokan',
  'America/Cordoba': 'America/Argentina/Cordoba',
  'America/Godthab': 'America/Nuuk',
  'America/Indianapolis': 'America/Indiana/Indianapolis',
  'America/Jujuy': 'America/Argentina/Jujuy',
  'America/Louisville': 'America/Kentucky/Louisville',
  'America/Mendoza': 'America/Argentina/Mendoza',
  'Asia/Calcutta': 'Asia/Kolkata',
  'Asia/Katmandu': 'Asia/Kathmandu',
  'Asia/Rangoon': 'Asia/Yangon',
  'Asia/Saigon': 'Asia/Ho_Chi_Minh',
  'Atlantic/Faeroe': 'Atlantic/Faroe',
  'Europe/Kiev': 'Europe/Kyiv',
  'Pacific/Enderbury': 'Pacific/Kanton',
  'Pacific/Ponape': 'Pacific/Pohnpei',
  'Pacific/Truk': 'Pacific/Chuuk'
}

/** A zone name as a person should see it: its current name, whatever spelling or alias was given. */
export function currentZoneName (zone: string): string {
  return CURRENT_ZONE_NAMES[zone] ?? zone
}

/**
 * The current name of an IANA time zone (Intl decides what exists), or null for anything else.
 * Offsets such as "+05:30" are refused: a preference names a place, whose offset changes with the
 * seasons and the law.
 */
export function canonicalTimeZone (name: string): string | null {
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(name)) return null
  try {
    return currentZoneName(new Intl.DateTimeFormat('en', { timeZone: name }).resolvedOptions().timeZone)
  } catch {
    return null
  }
}

/** The canonical form of a BCP 47 language tag that Intl can format dates in, or null. */
export function canonicalLocale (tag: string): string | null {
  try {
    const [canonical] = Intl.getCanonicalLocales(tag)
    if (canonical === undefined) return null
    return Intl.DateTimeFormat.supportedLocalesOf([canonical]).length === 1 ? canonical : null
  } catch {
    return null
  }
}

/** Minutes from midnight of an "HH:mm" time (24:00 is the day's end). */
export function minutesOfTime (time: string): number {
  const [hours, minutes] = time.split(':').map(Number)
  return (hours ?? 0) * 60 + (minutes ?? 0)
}

/**
 * The calendar colours a person chooses from. Each keeps the text of an event readable (WCAG AA,
 * 4.5:1) on its tint: 22 % of the colour on white under dark text, and 35 % on the dark page under
 * light text (web/src/ui/styles.css); test/lib/preferences.test.ts measures every one.
 */
export const CALENDAR_PALETTE: ReadonlyArray<{ color: string, name: string }> = [
  { color: '#1d4ed8', name: 'Blue' },
  { color: '#0b8043', name: 'Basil' },
  { color: '#d50000', name: 'Tomato' },
  { color: '#8e24aa', name: 'Grape' },
  { color: '#f4511e', name: 'Tangerine' },
  { color: '#039be5', name: 'Peacock' },
  { color: '#f6bf26', name: 'Banana' },
  { color: '#e67c73', name: 'Flamingo' },
  { color: '#33b679', name: 'Sage' },
  { color: '#7986cb', name: 'Lavender' },
  { color: '#616161', name: 'Graphite' },
  { color: '#795548', name: 'Cocoa' }
]

/**
 * Each calendar's colour: the one the person chose, else the next palette colour that no calendar
 * before it in the list has and no calendar was given by choice. Two calendars share a default only
 * past the palette's twelve colours (the list order is the own calendar, then each connection's
 * calendars, primary first, which is stable as connections are added).
 */
export function calendarColorsOf (keys: readonly string[], chosen: Readonly<Record<string, string>>): Map<string, string> {
  const colors = new Map<string, string>()
  const taken = new Set(keys.flatMap((key) => chosen[key] === undefined ? [] : [chosen[key] as string]))
  let next = 0
  for (const key of keys) {
    const choice = chosen[key]
    if (choice !== undefined) {
      colors.set(key, choice)
      continue
    }
    let color: string | undefined
    for (let tried = 0; tried < CALENDAR_PALETTE.length && color === undefined; tried++) {
      const candidate = (CALENDAR_PALETTE[(next + tried) % CALENDAR_PALETTE.length] as { color: string }).color
      if (!taken.has(candidate)) {
        color = candidate
        next = next + tried + 1
      }
    }
    // Past the palette: colours repeat in order rather than leaving a calendar without one.
    color ??= (CALENDAR_PALETTE[next++ % CALENDAR_PALETTE.length] as { color: string }).color
    taken.add(color)
    colors.set(key, color)
  }
  return colors
}

interface NamedPreferences {
  locale?: string
  timeZone?: string
  secondTimeZone?: string
  workingHours?: { start: string, end: string, days: number[] }
}

/**
 * What the schema cannot say of a preferences body: names Intl must know (stored in their current,
 * canonical form) and working hours that start before they end. The error names the field as a
 * schema error does ("body/timeZone ...").
 */
export function checkPreferences<T extends NamedPreferences> (preferences: T): { preferences: T } | { error: string } {
  const checked: T = { ...preferences }
  for (const field of ['timeZone', 'secondTimeZone'] as const) {
    const name = preferences[field]
    if (name === undefined) continue
    const zone = canonicalTimeZone(name)
    if (zone === null) return { error: `body/${field} must be an IANA time zone name such as Europe/Berlin` }
    checked[field] = zone
  }
  if (preferences.locale !== undefined) {
    const locale = canonicalLocale(preferences.locale)
    if (locale === null) return { error: 'body/locale must be a BCP 47 language tag such as de-DE' }
    checked.locale = locale
  }
  const hours = preferences.workingHours
  if (hours !== undefined && minutesOfTime(hours.start) >= minutesOfTime(hours.end)) return { error: 'body/workingHours/start must be before body/workingHours/end' }
  return { preferences: checked }
}
