import { setImmediate as nextTurn } from 'node:timers/promises'
import { performance } from 'node:perf_hooks'
import { DateTime } from 'luxon'
import { EVENT_LIMITS, RANGE_ITEM_OVERHEAD } from '../../schemas/event.js'
import type { EventRecord } from './record.js'
import type { ProviderRecord } from './record.js'
import { categoryOf } from './transition.js'
import { occurrenceId } from './ids.js'
import { EventRequestError } from './errors.js'
import { compileSeries, expandSeries, expansionPieces, RecurrenceRuleError, seriesEnd, type CompiledSeries, type Occurrence, type WalkMeter } from './recurrence.js'
import { eventInstant, occurrenceKey } from './time.js'
import { searchWordsOf } from './search-words.js'

/** Fields kept next to each stored event so the database can answer range queries in UTC. */
export interface StorageFields {
  startsAt: Date
  endsAt: Date
  /** For a series: when its last occurrence ends (null: never). Otherwise endsAt. */
  seriesEndsAt: Date | null
  /** For an occurrence: the instant of its original start. */
  originalStartsAt: Date | null
  /** The words the event is found by (search-words.ts). */
  searchWords: string[]
}

/**
 * The compiled rule of a stored series, or null for a series kept without its occurrences and
 * read as one event: a provider series whose rule is refused here, or one stored before its
 * rule was refused.
 */
export function expandableSeries (series: EventRecord, meter?: WalkMeter): CompiledSeries | null {
  const rule = series.recurrence?.rule
  if (rule === undefined || (series as ProviderRecord).expansionSkipped !== undefined) return null
  try {
    return compileSeries({ ...series, rule }, meter)
  } catch (error) {
    if (error instanceof RecurrenceRuleError) return null
    throw error
  }
}

export function storageFields (event: EventRecord): StorageFields {
  const startsAt = eventInstant(event.startDate, event.isAllDay, event.timeZone)
  const endsAt = eventInstant(event.endDate, event.isAllDay, event.timeZone)
  const category = categoryOf(event)
  const compiled = category === 'base' ? expandableSeries(event) : null
  return {
    startsAt,
    endsAt,
    seriesEndsAt: compiled === null ? endsAt : seriesEnd(compiled),
    originalStartsAt: category === 'instance' && event.originalStartDate !== undefined
      ? eventInstant(event.originalStartDate, event.isAllDay, event.timeZone)
      : null,
    searchWords: searchWordsOf(event)
  }
}

/**
 * occurrenceKey of an occurrence made here: its start is already an instant, so no date parsing
 * (a range read makes thousands of them).
 */
function keyOf (occurrence: Occurrence, isAllDay: boolean): string {
  if (isAllDay) return occurrence.startDate.replaceAll('-', '')
  return occurrence.start.toISOString().replace(/\.\d{3}/, '').replaceAll(/[-:]/g, '')
}

function occurrenceRecord (series: EventRecord, occurrence: Occurrence): EventRecord {
  const { recurrence: _rule, ...fields } = series
  return {
    ...fields,
    _id: occurrenceId(series._id, keyOf(occurrence, series.isAllDay)),
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
  const compiled = expandableSeries(series)
  if ((key.length === 8) !== series.isAllDay || compiled === null) return null
  const start = keyInstant(key, series)
  if (start === null) return null
  const candidates = expandSeries(compiled, start, new Date(start.getTime() + 1), EVENT_LIMITS.occurrencesPerSeries)
  const match = candidates.find((occurrence) => occurrence.start.getTime() === start.getTime())
  return match === undefined ? null : occurrenceRecord(series, match)
}

export interface SeriesWithEdits {
  series: EventRecord
  /** Every stored occurrence of the series, edited or cancelled. */
  edits: EventRecord[]
}

/** Refused when a range read would hold more than EVENT_LIMITS allows: the client narrows the range. */
function rangeTooLarge (): EventRequestError {
  return new EventRequestError(400, 'RANGE_TOO_LARGE',
    `The range holds more than ${EVENT_LIMITS.rangeItems} events or ${EVENT_LIMITS.rangeCharacters / 1024 / 1024} MB of text; narrow the range`)
}

/** Refused when the series of a range read take more walking than EVENT_LIMITS.rangePeriods. */
function rangeTooCostly (): EventRequestError {
  return new EventRequestError(400, 'RANGE_TOO_LARGE',
    `The series in the range take more than ${EVENT_LIMITS.rangePeriods} steps of their rules to expand; narrow the range`)
}

/**
 * Counts what one range read holds, and refuses it past EVENT_LIMITS (rangeItems,
 * rangeCharacters); also the meter of the read's rule walks, refused past rangePeriods.
 */
export class RangeBudget implements WalkMeter {
  items = 0
  characters = 0
  periods = 0

  /** Refuses the read once its rule walks together passed the bound (checked after each step). */
  checkWalks (): void {
    if (this.periods > EVENT_LIMITS.rangePeriods) throw rangeTooCostly()
  }

  /** Counts `count` items of this event's size. */
  hold (event: EventRecord, count = 1): void {
    this.items += count
    this.characters += count * textSize(event)
    if (this.items > EVENT_LIMITS.rangeItems || this.characters > EVENT_LIMITS.rangeCharacters) throw rangeTooLarge()
  }
}

function textSize (event: EventRecord): number {
  return RANGE_ITEM_OVERHEAD + event.title.length + (event.description?.length ?? 0) + (event.location?.length ?? 0) +
    (event.calendarId?.length ?? 0) + (event.providerEventId?.length ?? 0)
}

/** How long the range assembly may hold the event loop before it lets other requests run. */
const SLICE_MS = 10

/**
 * The answer of a range read: single events and edited occurrences that overlap [from, to)
 * as stored, plus every never-edited occurrence of each series, in start order. Series are
 * expanded piece by piece, giving the event loop back every few milliseconds; every occurrence
 * made is counted in `budget`, which refuses the read once it holds too much.
 */
export async function assembleRange (singles: EventRecord[], series: SeriesWithEdits[], from: Date, to: Date, budget = new RangeBudget()): Promise<EventRecord[]> {
  const byId = new Map<string, { event: EventRecord, start: number, end: number }>()
  const add = (event: EventRecord): void => {
    byId.set(event._id, {
      event,
      start: eventInstant(event.startDate, event.isAllDay, event.timeZone).getTime(),
      end: eventInstant(event.endDate, event.isAllDay, event.timeZone).getTime()
    })
  }
  for (const event of singles) {
    if (event.status !== 'confirmed' || categoryOf(event) === 'base') continue
    add(event)
  }
  let sliceStart = performance.now()
  for (const { series: base, edits } of series) {
    const compiled = expandableSeries(base, budget)
    budget.checkWalks()
    if (compiled === null) {
      const start = eventInstant(base.startDate, base.isAllDay, base.timeZone)
      const end = eventInstant(base.endDate, base.isAllDay, base.timeZone)
      if (base.status === 'confirmed' && start < to && end > from) add(base)
      continue
    }
    const editedKeys = new Set(edits.flatMap((edit) => edit.originalStartDate === undefined
      ? []
      : [occurrenceKey(edit.originalStartDate, base.isAllDay, base.timeZone)]))
    for (const piece of expansionPieces(compiled, from, to, budget)) {
      budget.checkWalks()
      budget.hold(base, piece.length)
      for (const occurrence of piece) {
        if (editedKeys.has(keyOf(occurrence, base.isAllDay))) continue
        const record = occurrenceRecord(base, occurrence)
        byId.set(record._id, { event: record, start: occurrence.start.getTime(), end: occurrence.end.getTime() })
      }
      if (performance.now() - sliceStart > SLICE_MS) {
        await nextTurn()
        sliceStart = performance.now()
      }
    }
  }
  // Ties are broken by end, then id, so the same data always reads in the same order.
  return [...byId.values()]
    .sort((a, b) => a.start - b.start || a.end - b.end || (a.event._id < b.event._id ? -1 : a.event._id > b.event._id ? 1 : 0))
    .map(({ event }) => event)
}

/**
 * A range answer as JSON text, item by item, giving the event loop back whenever it has worked
 * SLICE_MS: one serializer call over a whole answer (up to EVENT_LIMITS' 4 MB) holds the loop
 * for as long as it takes, about 100 ms on the test machine.
 */
export async function serializeInSlices<T> (items: T[], serialize: (item: T) => string): Promise<string> {
  const parts: string[] = []
  let sliceStart = performance.now()
  for (const item of items) {
    parts.push(serialize(item))
    if (performance.now() - sliceStart > SLICE_MS) {
      await nextTurn()
      sliceStart = performance.now()
    }
  }
  return `[${parts.join(',')}]`
}
