// A VTIMEZONE (RFC 5545 3.6.5) for an IANA zone, built from the zone database the runtime carries
// (luxon over Intl), so an event written with `DTSTART;TZID=<zone>` can be read by any client:
// ical.js and most servers take a zone's rules from the resource, not from the name.
import ICAL from 'ical.js'
import { DateTime, IANAZone } from 'luxon'

type Component = InstanceType<typeof ICAL.Component>

/** One change of a zone's offset: the UTC instant and the offsets (minutes) before and after. */
interface Transition { at: number, from: number, to: number }

const DAY_MS = 86_400_000
const MINUTE_MS = 60_000
const WEEKDAYS = ['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU'] as const

/** Zones whose date-times are written with `Z`: they need no VTIMEZONE. */
export function isUtcZone (zone: string): boolean {
  return ['UTC', 'ETC/UTC', 'GMT', 'ETC/GMT', 'Z'].includes(zone.toUpperCase())
}

/** Every offset change of the zone between two instants, to the minute. */
function transitionsOf (zone: string, fromMs: number, toMs: number): Transition[] {
  const iana = IANAZone.create(zone)
  const found: Transition[] = []
  let previousMs = fromMs
  let previous = iana.offset(fromMs)
  // No zone changes its offset twice within a day, so a daily step finds each change.
  for (let ms = fromMs + DAY_MS; ms <= toMs; ms += DAY_MS) {
    const current = iana.offset(ms)
    if (current !== previous) {
      let low = previousMs
      let high = ms
      while (high - low > MINUTE_MS) {
        const middle = low + Math.floor((high - low) / 2 / MINUTE_MS) * MINUTE_MS
        if (iana.offset(middle) === previous) low = middle
        else high = middle
      }
      found.push({ at: high, from: previous, to: current })
      previous = current
    }
    previousMs = ms
  }
  return found
}

/** The wall time at which a change happens, in the offset it changes from (RFC 5545 3.6.5). */
function localStart (transition: Transition): DateTime {
  return DateTime.fromMillis(transition.at + transition.from * MINUTE_MS, { zone: 'UTC' })
}

/** `FREQ=YEARLY;BYMONTH=..;BYDAY=..` when the changes of one kind follow one yearly rule, else null. */
function yearlyRule (changes: Transition[], years: number): string | null {
  if (changes.length !== years) return null
  const starts = changes.map(localStart)
  const first = starts[0] as DateTime
  const sameShape = starts.every((start, index) => start.year === first.year + index && start.month === first.month &&
    start.weekday === first.weekday && start.toFormat('HHmmss') === first.toFormat('HHmmss'))
  if (!sameShape) return null
  const weekday = WEEKDAYS[first.weekday - 1] as string
  const ordinal = Math.ceil(first.day / 7)
  if (starts.every((start) => Math.ceil(start.day / 7) === ordinal)) return `FREQ=YEARLY;BYMONTH=${first.month};BYDAY=${ordinal}${weekday}`
  const isLast = (start: DateTime): boolean => start.day + 7 > (start.daysInMonth as number)
  if (starts.every(isLast)) return `FREQ=YEARLY;BYMONTH=${first.month};BYDAY=-1${weekday}`
  return null
}

function offsetOf (minutes: number): InstanceType<typeof ICAL.UtcOffset> {
  return ICAL.UtcOffset.fromSeconds(minutes * 60)
}

function observance (zone: string, start: DateTime, from: number, to: number, at: number, rule: string | null): Component {
  const isDaylight = DateTime.fromMillis(at, { zone }).isInDST
  const component = new ICAL.Component(isDaylight ? 'daylight' : 'standard')
  component.updatePropertyWithValue('dtstart', ICAL.Time.fromData({
    year: start.year, month: start.month, day: start.day, hour: start.hour, minute: start.minute, second: start.second, isDate: false
  }))
  component.updatePropertyWithValue('tzoffsetfrom', offsetOf(from))
  component.updatePropertyWithValue('tzoffsetto', offsetOf(to))
  // Named as the runtime names it (EDT, or GMT+2 where English has no abbreviation).
  component.updatePropertyWithValue('tzname', DateTime.fromMillis(at, { zone }).setLocale('en-US').offsetNameShort as string)
  if (rule !== null) component.updatePropertyWithValue('rrule', ICAL.Recur.fromString(rule))
  return component
}

/**
 * The zone's VTIMEZONE for events from `firstYear` to `lastYear`. Changes that follow a yearly rule
 * over those years (and a year on each side) are written once with an RRULE, so a series read far
 * beyond them keeps its wall time; other zones get each change of the span written out.
 */
export function vtimezoneFor (zone: string, firstYear: number, lastYear: number): Component {
  const key = `${zone}|${firstYear}|${lastYear}`
  let text = built.get(key)
  if (text === undefined) {
    text = buildVtimezone(zone, firstYear, lastYear).toString()
    // Finding the changes takes thousands of zone look-ups; most writes name a zone already built.
    if (built.size >= BUILT_MAX) built.delete(built.keys().next().value as string)
    built.set(key, text)
  }
  return new ICAL.Component(ICAL.parse(text))
}

const BUILT_MAX = 64
const built = new Map<string, string>()

function buildVtimezone (zone: string, firstYear: number, lastYear: number): Component {
  const from = Date.UTC(firstYear - 1, 0, 1)
  const years = lastYear - firstYear + 3
  const changes = transitionsOf(zone, from, Date.UTC(lastYear + 2, 0, 1))
  const vtimezone = new ICAL.Component('vtimezone')
  vtimezone.updatePropertyWithValue('tzid', zone)
  const initial = IANAZone.create(zone).offset(from)
  const kinds = new Map<string, Transition[]>()
  for (const change of changes) kinds.set(`${change.from}>${change.to}`, [...kinds.get(`${change.from}>${change.to}`) ?? [], change])
  const rules = [...kinds.values()].map((group) => ({ group, rule: yearlyRule(group, years) }))
  if (changes.length > 0 && rules.every(({ rule }) => rule !== null)) {
    for (const { group, rule } of rules) {
      const [first] = group as [Transition]
      vtimezone.addSubcomponent(observance(zone, localStart(first), first.from, first.to, first.at, rule))
    }
    return vtimezone
  }
  // The offset the span starts with, then each change as it happens.
  vtimezone.addSubcomponent(observance(zone, DateTime.fromMillis(from + initial * MINUTE_MS, { zone: 'UTC' }), initial, initial, from, null))
  for (const change of changes) vtimezone.addSubcomponent(observance(zone, localStart(change), change.from, change.to, change.at, null))
  return vtimezone
}
