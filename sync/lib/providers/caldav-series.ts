// A CalDAV series edited in place, as pure functions over ical.js components: its overrides
// (RECURRENCE-ID) and exclusions (EXDATE) found by an occurrence's original start, and moved with
// the series when its start moves, as RFC 5545 asks of a resource holding a series and its
// exceptions (RFC 4791 4.1). Reading and writing one event's content is caldav-mapping.ts.
import ICAL from 'ical.js'
import type { EventContent } from '../../../schemas/sync/index.js'
import { contentTiming, exceptionMover, followedFields, occurrenceTimes } from '../../../lib/events/series-move.js'
import { contentOf, isWrittenInZone, timeOf, timeProperty, type Component, type Property, type Time } from './caldav-mapping.js'

/** The VEVENT of the series (no RECURRENCE-ID). */
export function masterOf (calendar: Component): Component | null {
  return calendar.getAllSubcomponents('vevent').find((event) => event.getFirstProperty('recurrence-id') === null) ?? null
}

/** The override of one occurrence, matched by its original start as the contract writes it. */
export function overrideOf (calendar: Component, originalStartDate: string, calendarTimeZone: string): Component | null {
  const wanted = Date.parse(originalStartDate.length === 10 ? `${originalStartDate}T00:00:00Z` : originalStartDate)
  return calendar.getAllSubcomponents('vevent').find((event) => {
    const property = event.getFirstProperty('recurrence-id')
    const original = property === null ? null : timeOf(property, calendar, calendarTimeZone)
    if (original === null) return false
    return original.value === originalStartDate || Date.parse(original.isDate ? `${original.value}T00:00:00Z` : original.value) === wanted
  }) ?? null
}

/** The RECURRENCE-ID (or EXDATE) of an occurrence, in the form of the series' DTSTART (date, zoned or UTC). */
export function occurrenceProperty (name: 'recurrence-id' | 'exdate', master: Component, originalStartDate: string): Property {
  const start = master.getFirstProperty('dtstart')
  const value = start?.getFirstValue() as Time | null | undefined
  if (value !== null && typeof value === 'object' && 'isDate' in value && value.isDate) return timeProperty(name, originalStartDate, true, 'UTC')
  const tzid = start?.getParameter('tzid')
  return timeProperty(name, originalStartDate, false, typeof tzid === 'string' && isWrittenInZone(tzid) ? tzid : 'UTC')
}

/**
 * The series' overrides once the series changed from `before` to `after` (its master already
 * rewritten): each moves to its new RECURRENCE-ID, and with it its time when it was still at its
 * occurrence's, or goes, by the backend's own rule (lib/events/series-move.ts), so both sides hold
 * the same exceptions. A series whose timing is unchanged keeps them where they are, as they are
 * written (another client's TZID and its VTIMEZONE included). The title, description and location the series
 * changed reach each override that had the old ones.
 */
export function moveOverrides (calendar: Component, master: Component, before: EventContent, after: EventContent, calendarTimeZone: string): void {
  const mover = exceptionMover(contentTiming(before), contentTiming(after))
  for (const override of calendar.getAllSubcomponents('vevent')) {
    const property = override.getFirstProperty('recurrence-id')
    if (property === null) continue
    const original = timeOf(property, calendar, calendarTimeZone)
    const content = contentOf(override, calendar, calendarTimeZone)
    const moved = mover === null || original === null || content === null
      ? null
      : mover({ originalStartDate: original.value, startDate: content.startDate, endDate: content.endDate })
    if (moved === null) {
      calendar.removeSubcomponent(override)
      continue
    }
    // An override's RECURRENCE-ID is its id at the server: written again only when it moved.
    const same = (a: string, b: string) => a === b || Date.parse(a) === Date.parse(b)
    if (original !== null && !same(moved.originalStartDate, original.value)) {
      override.removeAllProperties('recurrence-id')
      override.addProperty(occurrenceProperty('recurrence-id', master, moved.originalStartDate))
    }
    const followed = followedFields(before, after, content ?? {})
    if (followed.title !== undefined) override.updatePropertyWithValue('summary', followed.title)
    for (const [name, value] of [['description', followed.description], ['location', followed.location]] as const) {
      if (value === undefined) continue
      if (value === '') override.removeAllProperties(name)
      else override.updatePropertyWithValue(name, value)
    }
    if (moved.startDate !== content?.startDate) {
      override.removeAllProperties('dtstart')
      override.removeAllProperties('dtend')
      override.removeAllProperties('duration')
      override.addProperty(timeProperty('dtstart', moved.startDate, after.isAllDay, content?.timeZone ?? after.timeZone))
      override.addProperty(timeProperty('dtend', moved.endDate, after.isAllDay, content?.timeZone ?? after.timeZone))
    }
  }
}

/** One value of a multi-valued EXDATE as a property of its own, with the TZID it was written with. */
function singleExclusion (property: Property, value: Time): Property {
  const single = new ICAL.Property('exdate')
  single.setValue(value)
  const tzid = property.getParameter('tzid')
  if (typeof tzid === 'string') single.setParameter('tzid', tzid)
  return single
}

/** An original start as a comparable number: a date at UTC midnight, a date-time as its instant. */
function originalKey (value: string): number {
  return Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value)
}

/** The occurrences a series' EXDATEs exclude, as original starts the contract writes. */
export function exclusionsOf (master: Component, calendar: Component, calendarTimeZone: string): string[] {
  return master.getAllProperties('exdate').flatMap((property) => property.getValues().flatMap((value) => {
    const time = timeOf(singleExclusion(property, value as Time), calendar, calendarTimeZone)
    return time === null ? [] : [time.value]
  }))
}

/**
 * After the series' master was rewritten from `before` to `after`: the occurrences it excluded
 * before (deleted one by one, here or by another client; the backend keeps its own such deletions
 * as cancelled occurrences, not in the rule it sends) stay excluded where they moved with the
 * series, by the same rule as its overrides (lib/events/series-move.ts), so a rename, a move or a
 * "this and following" cut brings back no occurrence that was deleted. Answers how many it kept
 * beyond the rule the backend sent: the backend learns them from the written series.
 */
export function moveExclusions (calendar: Component, master: Component, excluded: string[], before: EventContent, after: EventContent, calendarTimeZone: string): number {
  const mover = exceptionMover(contentTiming(before), contentTiming(after))
  if (mover === null) return 0
  let kept = 0
  const present = new Set(exclusionsOf(master, calendar, calendarTimeZone).map(originalKey))
  for (const original of excluded) {
    const moved = mover({ originalStartDate: original, ...occurrenceTimes(contentTiming(before), original) })
    if (moved === null || present.has(originalKey(moved.originalStartDate))) continue
    master.addProperty(occurrenceProperty('exdate', master, moved.originalStartDate))
    present.add(originalKey(moved.originalStartDate))
    kept++
  }
  return kept
}

/** The occurrence is no longer excluded (it is written as an override of its own now). */
export function removeExclusion (calendar: Component, master: Component, originalStartDate: string, calendarTimeZone: string): void {
  const wanted = originalKey(originalStartDate)
  for (const property of master.getAllProperties('exdate')) {
    const kept = property.getValues().filter((value) => {
      const time = timeOf(singleExclusion(property, value as Time), calendar, calendarTimeZone)
      return time === null || originalKey(time.value) !== wanted
    })
    if (kept.length === 0) master.removeProperty(property)
    else if (kept.length !== property.getValues().length) property.setValues(kept)
  }
}
