import { DateTime } from 'luxon'
import { EVENT_LIMITS } from '../../schemas/event.js'
import type { EventRecord } from './record.js'
import { categoryOf } from './transition.js'
import { occurrenceId } from './ids.js'
import { compileSeries, expandSeries, seriesEnd, type CompiledSeries, type Occurrence } from './recurrence.js'
import { eventInstant, occurrenceKey } from './time.js'

/** Fields kept next to each stored event so the database can answer range queries in UTC. */
export interface StorageFields {
  startsAt: Date
  endsAt: Date
  /** For a series: when its last occurrence ends (null: never). Otherwise endsAt. */
  seriesEndsAt: Date | null
  /** For an occurrence: the instant of its original start. */
  originalStartsAt: Date | null
}

function compiledSeriesOf (series: EventRecord): CompiledSeries {
  const rule = series.recurrence?.rule
  if (rule === undefined) throw new TypeError(`event ${series._id} is not a series`)
  return compileSeries({ ...series, rule })
}

export function storageFields (event: EventRecord): StorageFields {
  const startsAt = eventInstant(event.startDate, event.isAllDay, event.timeZone)
  const endsAt = eventInstant(event.endDate, event.isAllDay, event.timeZone)
  const category = categoryOf(event)
  return {
    startsAt,
    endsAt,
    seriesEndsAt: category === 'base' ? seriesEnd(compiledSeriesOf(event)) : endsAt,
    originalStartsAt: category === 'instance' && event.originalStartDate !== undefined
      ? eventInstant(event.originalStartDate, event.isAllDay, event.timeZone)
      : null
  }
}

function occurrenceRecord (series: EventRecord, occurrence: Occurrence): EventRecord {
  const { recurrence: _rule, ...fields } = series
  return {
    ...fields,
    _id: occurrenceId(series._id, occurrenceKey(occurrence.startDate, series.isAllDay, series.timeZone)),
    recurrence: { eventId: series._id },
    originalStartDate: occurrence.startDate,
    startDate: occurrence.startDate,
    endDate: occurrence.endDate
  }
}

function keyInstant (key: string, series: EventRecord): Date | null {
  const parsed = key.length === 8
    ? DateTime.fromFormat(key, 'yyyyMMdd', { zone: series.timeZone })
    : DateTime.fromFormat(key, "yyyyMMdd'T'HHmmss'Z'", { zone: 'UTC' })
  return parsed.isValid ? parsed.toJSDate() : null
}

/** The never-edited occurrence of `series` whose key is `key`, or null if the series has none there. */
export function occurrenceAt (series: EventRecord, key: string): EventRecord | null {
  if ((key.length === 8) !== series.isAllDay) return null
  const start = keyInstant(key, series)
  if (start === null) return null
  const candidates = expandSeries(compiledSeriesOf(series), start, new Date(start.getTime() + 1), EVENT_LIMITS.occurrencesPerSeries)
  const match = candidates.find((occurrence) => occurrence.start.getTime() === start.getTime())
  return match === undefined ? null : occurrenceRecord(series, match)
}

export interface SeriesWithEdits {
  series: EventRecord
  /** Every stored occurrence of the series, edited or cancelled. */
  edits: EventRecord[]
}

/**
 * The answer of a range read: single events and edited occurrences that overlap [from, to)
 * as stored, plus every never-edited occurrence of each series, in start order.
 */
export function assembleRange (singles: EventRecord[], series: SeriesWithEdits[], from: Date, to: Date): EventRecord[] {
  const byId = new Map<string, { event: EventRecord, start: number, end: number }>()
  for (const event of singles) {
    if (event.status !== 'confirmed' || categoryOf(event) === 'base') continue
    byId.set(event._id, {
      event,
      start: eventInstant(event.startDate, event.isAllDay, event.timeZone).getTime(),
      end: eventInstant(event.endDate, event.isAllDay, event.timeZone).getTime()
    })
  }
  for (const { series: base, edits } of series) {
    const editedKeys = new Set(edits.flatMap((edit) => edit.originalStartDate === undefined
      ? []
      : [occurrenceKey(edit.originalStartDate, base.isAllDay, base.timeZone)]))
    for (const occurrence of expandSeries(compiledSeriesOf(base), from, to, EVENT_LIMITS.occurrencesPerSeries)) {
      if (editedKeys.has(occurrenceKey(occurrence.startDate, base.isAllDay, base.timeZone))) continue
      const record = occurrenceRecord(base, occurrence)
      byId.set(record._id, { event: record, start: occurrence.start.getTime(), end: occurrence.end.getTime() })
    }
  }
  // Ties are broken by end, then id, so the same data always reads in the same order.
  return [...byId.values()]
    .sort((a, b) => a.start - b.start || a.end - b.end || (a.event._id < b.event._id ? -1 : a.event._id > b.event._id ? 1 : 0))
    .map(({ event }) => event)
}
