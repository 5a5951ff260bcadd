// The preference rules both sides share (lib/preferences.ts): zone and locale names as Intl knows
// them, under their current names; what the schema cannot check; and the calendar palette, whose
// defaults never repeat within twelve calendars and whose every colour keeps an event's text
// readable on its tint in the light and the dark page (as web/src/ui/styles.css mixes them).
import { test } from 'tap'
import { channels, contrast, mix } from './contrast.js'
import { CALENDAR_PALETTE, calendarColorsOf, canonicalLocale, canonicalTimeZone, checkPreferences, currentZoneName, minutesOfTime } from '../../lib/preferences.js'

test('time zones: IANA names Intl knows, under their current name', async (t) => {
  t.equal(canonicalTimeZone('Europe/Berlin'), 'Europe/Berlin')
  t.equal(canonicalTimeZone('Asia/Calcutta'), 'Asia/Kolkata', 'an old name')
  t.equal(canonicalTimeZone('Asia/Kolkata'), 'Asia/Kolkata', 'the current name, which ICU resolves to the old one')
  t.equal(canonicalTimeZone('europe/kiev'), 'Europe/Kyiv', 'any case')
  t.equal(canonicalTimeZone('UTC'), 'UTC')
  t.equal(currentZoneName('Asia/Saigon'), 'Asia/Ho_Chi_Minh')
  t.equal(currentZoneName('Europe/Paris'), 'Europe/Paris')
  for (const bad of ['Mars/Olympus_Mons', '+05:30', 'GMT+5', '', ' Europe/Berlin', 'Europe/Berlin\n']) t.equal(canonicalTimeZone(bad), null, JSON.stringify(bad))
})

test('locales: BCP 47 tags Intl formats dates in, canonical', async (t) => {
  t.equal(canonicalLocale('de-de'), 'de-DE')
  t.equal(canonicalLocale('en-GB'), 'en-GB')
  t.equal(canonicalLocale('fr'), 'fr')
  for (const bad of ['not a locale', 'de_DE', '', 'de-DE-1234567890']) t.equal(canonicalLocale(bad), null, JSON.stringify(bad))
})

test('what the schema cannot check', async (t) => {
  t.same(checkPreferences({ timeZone: 'Asia/Calcutta', secondTimeZone: 'Asia/Saigon', locale: 'de-de' }), { preferences: { timeZone: 'Asia/Kolkata', secondTimeZone: 'Asia/Ho_Chi_Minh', locale: 'de-DE' } })
  t.same(checkPreferences({ timeZone: 'Nowhere' }), { error: 'body/timeZone must be an IANA time zone name such as Europe/Berlin' })
  t.same(checkPreferences({ secondTimeZone: 'Nowhere' }), { error: 'body/secondTimeZone must be an IANA time zone name such as Europe/Berlin' })
  t.same(checkPreferences({ locale: 'xx-YY-123456789' }), { error: 'body/locale must be a BCP 47 language tag such as de-DE' })
  t.same(checkPreferences({ workingHours: { start: '09:00', end: '09:00', days: [] } }), { error: 'body/workingHours/start must be before body/workingHours/end' })
  t.same(checkPreferences({ workingHours: { start: '22:00', end: '24:00', days: [7] } }), { preferences: { workingHours: { start: '22:00', end: '24:00', days: [7] } } })
  t.equal(minutesOfTime('08:30'), 510)
  t.equal(minutesOfTime('24:00'), 1440)
})

test('default colours: distinct, the person\'s choices kept and never given to another', async (t) => {
  const keys = ['own', 'me@gmail.com', 'family@group.calendar.google.com', 'AAMkOutlook', 'https://dav.example.com/home/']
  const colors = calendarColorsOf(keys, {})
  t.equal(new Set(colors.values()).size, keys.length, 'five calendars, five colours')
  t.equal(colors.get('own'), CALENDAR_PALETTE[0]?.color, 'the own calendar first')
  t.same([...calendarColorsOf(keys, {}).entries()], [...colors.entries()], 'the same list gives the same colours')

  const chosen = calendarColorsOf(keys, { AAMkOutlook: CALENDAR_PALETTE[0]?.color as string })
  t.equal(chosen.get('AAMkOutlook'), CALENDAR_PALETTE[0]?.color, 'the choice')
  t.not(chosen.get('own'), CALENDAR_PALETTE[0]?.color, 'no default takes a chosen colour')
  t.equal(new Set(chosen.values()).size, keys.length)
  t.same(calendarColorsOf(['a', 'b'], { a: '#123456', b: '#123456' }), new Map([['a', '#123456'], ['b', '#123456']]), 'two chosen alike stay alike: a choice is the person\'s')

  const many = Array.from({ length: CALENDAR_PALETTE.length }, (_, index) => `c${index}`)
  t.equal(new Set(calendarColorsOf(many, {}).values()).size, CALENDAR_PALETTE.length, 'as many distinct defaults as the palette holds')
  t.equal(calendarColorsOf([...many, 'one more'], {}).size, CALENDAR_PALETTE.length + 1, 'past it, every calendar still has a colour')
})

test('every palette colour keeps event text readable (4.5:1) in light and dark mode', async (t) => {
  t.equal(new Set(CALENDAR_PALETTE.map((entry) => entry.color)).size, CALENDAR_PALETTE.length, 'no colour twice')
  t.equal(new Set(CALENDAR_PALETTE.map((entry) => entry.name)).size, CALENDAR_PALETTE.length, 'no name twice')
  for (const { color, name } of CALENDAR_PALETTE) {
    const light = contrast(mix(color, 0.22, '#ffffff'), channels('#10192b'))
    const dark = contrast(mix(color, 0.35, '#161c24'), channels('#eef2f7'))
    t.ok(light >= 4.5, `${name} (${color}) light: ${light.toFixed(2)}`)
    t.ok(dark >= 4.5, `${name} (${color}) dark: ${dark.toFixed(2)}`)
  }
})
