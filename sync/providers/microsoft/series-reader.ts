import type { ProviderEvent, EventContent } from '../../../schemas/sync/index.js'
import { toProviderEvent, type GraphEvent } from '../../lib/providers/microsoft-mapping.js'
import {
  DAY_MS, FULL_RANGE, missingOccurrences, MOVED_EXCEPTION_MARGIN_MS, occurrenceKey, utcMs, versionOf
} from '../../lib/providers/microsoft-series.js'
import { ProviderNotFoundError, type ProviderCalendar, type ProviderContext } from '../../lib/providers/port.js'
import type { MicrosoftGraph } from './graph.js'
import { setBounded } from '../../lib/bounded-map.js'

export interface GraphPage {
  value?: GraphEvent[]
  '@odata.nextLink'?: string
  '@odata.deltaLink'?: string
}

/** One answer of a JSON batch (Microsoft Graph, "Combine multiple HTTP requests using JSON batching"). */
interface GraphBatchAnswer {
  id: string
  status: number
  body?: unknown
}

export /** A series as a batch read it: its master (null when Graph no longer has it) and the first page of its instances. */
interface SeriesPrefetch {
  master: GraphEvent | null
  instances?: GraphPage
}

export /** A series as a pass read it: what was handed over, and each instance Graph listed with its version. */
interface SeriesRead {
  event: ProviderEvent
  /** Instance id -> its `@odata.etag` and its span (UTC ms). */
  instances: Map<string, { version: string | null, startMs: number, endMs: number }>
}

/**
 * Occurrence ids seen in delta rounds, with their series: Graph tells of a deleted occurrence by its
 * id alone. Bounded; an id no longer known costs a check of every series of the calendar instead.
 */
const SEEN_IDS_SIZE = 50_000
/** Graph takes at most 20 requests in one JSON batch: the master and the instances of ten series. */
const BATCH_REQUESTS_MAX = 20

/** When Graph last changed the event, in UTC with its `Z`. */
export function updatedOf (event: GraphEvent): string {
  const value = event.lastModifiedDateTime ?? ''
  return value === '' || value.endsWith('Z') ? value : `${value}Z`
}

/**
 * Reads of events and series at Graph, shared by the delta rounds and the writes: a series is sent
 * with the occurrences Graph no longer lists as EXDATEs, and every id read is remembered with its
 * series, since Graph tells of a deleted occurrence by its id alone.
 */
export class MicrosoftSeriesReader {
  readonly #microsoft: MicrosoftGraph
  readonly #pageSize: number
  readonly #now: () => Date
  /** Graph ids seen in a calendar: an occurrence's with its series master's id, others with ''. */
  readonly #seen = new Map<string, string>()

  constructor (microsoft: MicrosoftGraph, options: { pageSize?: number | undefined, now: () => Date }) {
    this.#microsoft = microsoft
    this.#pageSize = options.pageSize ?? 500
    this.#now = options.now
  }

  /** The series master an id read before belongs to ('' for none); undefined when it was never read. */
  seriesOf (id: string): string | undefined {
    return this.#seen.get(id)
  }

  remember (id: string, seriesId: string): void {
    this.#seen.delete(id)
    setBounded(this.#seen, id, seriesId, SEEN_IDS_SIZE)
  }

  /** The ids of the calendar's series masters (`/events` lists single events and masters, not occurrences). */
  async seriesIds (context: ProviderContext, calendar: ProviderCalendar): Promise<string[]> {
    const ids: string[] = []
    let next: string | null = `${this.#microsoft.base}/me/calendars/${encodeURIComponent(calendar.calendarId)}/events?` +
      new URLSearchParams({ $select: 'id,type', $top: String(this.#pageSize) }).toString()
    while (next !== null) {
      const page: GraphPage = await this.#microsoft.call(context, 'event.list', 'GET', next)
      for (const item of page.value ?? []) {
        this.remember(item.id, '')
        if (item.type === 'seriesMaster') ids.push(item.id)
      }
      next = page['@odata.nextLink'] ?? null
    }
    return ids
  }

  /** A series master as the backend is told of it: its rule, and the occurrences Graph no longer has as EXDATEs. */
  async seriesEvent (context: ProviderContext, master: GraphEvent, calendar: ProviderCalendar, now: Date, read?: SeriesRead['instances'], firstInstances?: GraphPage): Promise<ProviderEvent | null> {
    const mapped = toProviderEvent(master, calendar.timeZone, now)
    const content = mapped?.content
    if (mapped === null || content?.recurrence === undefined) return mapped
    const excluded = await this.deletedOccurrences(context, master.id, content, now, read, firstInstances)
    return excluded.length === 0 ? mapped : { ...mapped, content: { ...content, recurrence: [...content.recurrence, ...excluded] } }
  }

  /**
   * EXDATE lines for the occurrences of the rule, within the range the calendar is synchronised over,
   * that are not among the series' instances at Graph (expanded as the backend expands them).
   */
  async deletedOccurrences (context: ProviderContext, masterId: string, content: EventContent, now: Date, read?: SeriesRead['instances'], firstPage?: GraphPage): Promise<string[]> {
    const present = new Set<string>()
    let given = firstPage
    let next: string | null = this.#microsoft.base + this.seriesInstancesPath(masterId, now)
    const headers = this.pageSizeHeader()
    while (next !== null) {
      const page: GraphPage = given ?? await this.#microsoft.call(context, 'event.instances', 'GET', next, undefined, headers)
      given = undefined
      for (const instance of page.value ?? []) {
        const key = occurrenceKey(instance, content)
        if (key !== null) present.add(key)
        this.remember(instance.id, masterId)
        read?.set(instance.id, { version: versionOf(instance), startMs: utcMs(instance.start?.dateTime), endMs: utcMs(instance.end?.dateTime) })
      }
      next = page['@odata.nextLink'] ?? null
    }
    return missingOccurrences(content, present, now)
  }

  /** Every instance of a series over the synchronised range (and a margin for moved exceptions). */
  async instances (context: ProviderContext, masterId: string): Promise<GraphEvent[]> {
    const found: GraphEvent[] = []
    // Whole instances: their content is written back onto the new pattern.
    let next: string | null = this.#microsoft.base + this.seriesInstancesPath(masterId, this.#now(), null)
    while (next !== null) {
      const page: GraphPage = await this.#microsoft.call(context, 'event.instances', 'GET', next, undefined, this.pageSizeHeader())
      found.push(...page.value ?? [])
      next = page['@odata.nextLink'] ?? null
    }
    return found
  }

  /**
   * A series' instances over the synchronised range, as a path below the Graph version: by default
   * only what tells which occurrences exist and their versions; `null` asks for whole instances.
   */
  seriesInstancesPath (masterId: string, now: Date, fields: string | null = 'id,type,start,end,originalStart,isAllDay,changeKey'): string {
    return `/me/events/${encodeURIComponent(masterId)}/instances?` + new URLSearchParams({
      // Wider than the range, so an exception moved across its edge still shows its original start.
      startDateTime: new Date(now.getTime() - FULL_RANGE.beforeMs - MOVED_EXCEPTION_MARGIN_MS).toISOString(),
      endDateTime: new Date(now.getTime() + FULL_RANGE.afterMs + MOVED_EXCEPTION_MARGIN_MS).toISOString(),
      ...(fields === null ? {} : { $select: fields })
    }).toString()
  }

  pageSizeHeader (): Record<string, string> {
    return { Prefer: `odata.maxpagesize=${this.#pageSize}` }
  }

  /**
   * The master and the first page of instances of each series, through JSON batches of ten series.
   * Only what Graph answered is kept: a master it no longer has (404) as null, and each 200. A
   * series with any other answer (throttled, failed) is left out, to be read on its own.
   * `onAnswer` gets each batch's series as it arrives, while the next batch is on its way: one batch
   * is in flight at a time, as before, and the work on an answer no longer waits for the next.
   */
  async readSeries (context: ProviderContext, masterIds: string[], now: Date, onAnswer?: (answered: Map<string, SeriesPrefetch>) => Promise<void>): Promise<Map<string, SeriesPrefetch>> {
    const read = new Map<string, SeriesPrefetch>()
    const perBatch = BATCH_REQUESTS_MAX / 2
    // A single series gains nothing from a batch.
    if (masterIds.length < 2) return read
    const chunks: string[][] = []
    for (let at = 0; at < masterIds.length; at += perBatch) chunks.push(masterIds.slice(at, at + perBatch))
    const send = async (chunk: string[]): Promise<{ responses?: GraphBatchAnswer[] }> => await this.#microsoft.call(context, 'batch', 'POST', `${this.#microsoft.base}/$batch`, {
      requests: chunk.flatMap((masterId, index) => [
        { id: `m${index}`, method: 'GET', url: `/me/events/${encodeURIComponent(masterId)}` },
        { id: `i${index}`, method: 'GET', url: this.seriesInstancesPath(masterId, now), headers: this.pageSizeHeader() }
      ])
    })
    let next: Promise<{ responses?: GraphBatchAnswer[] }> | null = send(chunks[0] as string[])
    for (const [position, chunk] of chunks.entries()) {
      const answer: { responses?: GraphBatchAnswer[] } = await (next as Promise<{ responses?: GraphBatchAnswer[] }>)
      next = position + 1 < chunks.length ? send(chunks[position + 1] as string[]) : null
      // Graph answers in any order: each answer names its request.
      const byId = new Map((answer.responses ?? []).map((response) => [response.id, response]))
      const answered = new Map<string, SeriesPrefetch>()
      chunk.forEach((masterId, index) => {
        const master = byId.get(`m${index}`)
        const instances = byId.get(`i${index}`)
        if (master?.status === 404) answered.set(masterId, { master: null })
        else if (master?.status === 200 && instances?.status === 200) answered.set(masterId, { master: master.body as GraphEvent, instances: instances.body as GraphPage })
      })
      for (const [masterId, prefetch] of answered) read.set(masterId, prefetch)
      try {
        await onAnswer?.(answered)
      } catch (error) {
        // The batch on its way is not wanted any more; its own failure must not surface unhandled.
        next?.catch(() => {})
        throw error
      }
    }
    return read
  }

  /** The event as Graph holds it now; null when it is gone. */
  async current (context: ProviderContext, eventId: string): Promise<GraphEvent | null> {
    try {
      return await this.#microsoft.call<GraphEvent>(context, 'event.get', 'GET', `${this.#microsoft.base}/me/events/${encodeURIComponent(eventId)}`)
    } catch (error) {
      if (error instanceof ProviderNotFoundError) return null
      throw error
    }
  }

  /** The occurrence of a series that started at `originalStartDate`; null when there is none. */
  async occurrence (context: ProviderContext, seriesId: string, originalStartDate: string): Promise<GraphEvent | null> {
    const allDay = /^\d{4}-\d{2}-\d{2}$/.test(originalStartDate)
    const start = new Date(allDay ? `${originalStartDate}T00:00:00Z` : originalStartDate)
    // A day on both sides: an all-day occurrence's UTC start depends on the series' zone.
    const query = new URLSearchParams({ startDateTime: new Date(start.getTime() - DAY_MS).toISOString(), endDateTime: new Date(start.getTime() + 2 * DAY_MS).toISOString() })
    const page: GraphPage = await this.#microsoft.call(context, 'event.instances', 'GET', `${this.#microsoft.base}/me/events/${encodeURIComponent(seriesId)}/instances?${query.toString()}`)
    const wanted = allDay ? originalStartDate : start.toISOString()
    return (page.value ?? []).find((item) => {
      const original = item.originalStart ? new Date(item.originalStart.endsWith('Z') ? item.originalStart : `${item.originalStart}Z`) : null
      if (original === null || Number.isNaN(original.getTime())) return false
      return allDay ? item.start?.dateTime.slice(0, 10) === wanted : original.toISOString() === wanted
    }) ?? null
  }

  async mapped (context: ProviderContext, event: GraphEvent, calendar: ProviderCalendar): Promise<ProviderEvent> {
    if (event.type === 'seriesMaster') {
      // Sent without its exclusions, a master would bring back the occurrences deleted at Microsoft.
      const series = await this.seriesEvent(context, event, calendar, this.#now())
      if (series !== null) return series
    }
    // An occurrence becomes an exception once written; a plain one is told of as its master's exception.
    const described = event.type === 'occurrence' ? { ...event, type: 'exception' } : event
    const mapped = toProviderEvent(described, calendar.timeZone, this.#now())
    if (mapped === null) {
      const reread = await this.current(context, event.id)
      const again = reread === null ? null : toProviderEvent(reread, calendar.timeZone, this.#now())
      if (again === null) throw new Error('Microsoft answered a write with an event it cannot describe')
      return again
    }
    return mapped
  }
}
