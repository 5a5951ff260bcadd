import { compileSeries, hasOccurrenceAt, RecurrenceRuleError } from '../../../lib/events/recurrence.js'
import { contentTiming, exceptionMover, followedFields, type ExceptionTiming } from '../../../lib/events/series-move.js'
import { eventInstant } from '../../../lib/events/time.js'
import type { EventContent } from '../../../schemas/sync/index.js'
import { planWrite } from '../../lib/merge.js'
import { providerVersionWins } from '../../lib/provider-sync.js'
import { contentOf, graphFieldsOf, graphRecurrenceOf, rruleLines, sameTiming, transactionIdFor, type GraphEvent } from '../../lib/providers/microsoft-mapping.js'
import { originalStartOf, stillDeleted } from '../../lib/providers/microsoft-series.js'
import { ProviderNotFoundError, ProviderRejectedError, type ProviderCalendar, type ProviderContext, type ProviderWrite, type WriteResult } from '../../lib/providers/port.js'
import type { MicrosoftGraph } from './graph.js'
import { updatedOf, type MicrosoftSeriesReader } from './series-reader.js'

/**
 * Our changes written to Graph: merged part by part with a change made there since, a series'
 * pattern and times written only when they changed (Graph drops a series' exceptions on such a
 * write, so they are read first and written again), and a new series' excluded occurrences deleted.
 */
export class MicrosoftWriter {
  readonly #microsoft: MicrosoftGraph
  readonly #reader: MicrosoftSeriesReader
  readonly #now: () => Date

  constructor (microsoft: MicrosoftGraph, reader: MicrosoftSeriesReader, now: () => Date) {
    this.#microsoft = microsoft
    this.#reader = reader
    this.#now = now
  }

  async writeEvent (context: ProviderContext, calendar: ProviderCalendar, write: ProviderWrite): Promise<WriteResult> {
    const { subject } = write
    const occurrence = subject.providerEventId === undefined && subject.seriesProviderEventId && subject.originalStartDate
      ? await this.#reader.occurrence(context, subject.seriesProviderEventId, subject.originalStartDate)
      : null
    // A report made before the backend learnt the id of our insert (created, then deleted or
    // changed while Graph was away) reaches the event that insert made.
    const target = subject.providerEventId ?? occurrence?.id ?? write.ownProviderEventId ?? null
    const current = target === null ? occurrence : await this.#reader.current(context, target)
    const removal = write.operation === 'delete' || subject.cancelled === true

    // Microsoft's copy as our own last write left it (the same change key) is no change by another
    // device: its lastModifiedDateTime is when that write arrived, which can be after the backend's
    // change that this write carries (an event created and deleted here while Graph was down).
    // An occurrence Graph never changed carries its series' version (a series written after this
    // change was made, when the change waited for it): a change of it here is the newer one.
    const ownCopy = current !== null && ((write.ownVersion !== undefined && current['@odata.etag'] === write.ownVersion) || current.type === 'occurrence')
    // A change made there since the version this one was made on is merged with it, part by part.
    const theirs = removal || current === null || current.isCancelled === true ? null : contentOf(current, calendar.timeZone)
    const plan = removal ? null : planWrite(subject, current === null ? null : { ...(theirs === null ? {} : { content: theirs }), updated: updatedOf(current) }, ownCopy)
    if (current !== null && (plan === null ? !ownCopy && providerVersionWins(updatedOf(current), subject.lastUpdated) : plan.kind === 'theirs')) {
      return { outcome: 'providerNewer', event: await this.#reader.mapped(context, current, calendar) }
    }
    const ifMatch: Record<string, string> = current?.['@odata.etag'] ? { 'If-Match': current['@odata.etag'] } : {}

    if (removal) {
      if (current === null || current.isCancelled === true) return { outcome: 'nothingToDo', event: null }
      try {
        await this.#microsoft.call(context, 'event.delete', 'DELETE', `${this.#microsoft.base}/me/events/${encodeURIComponent(current.id)}`, undefined, ifMatch)
      } catch (error) {
        // Deleted there meanwhile: the write has nothing left to do.
        if (!(error instanceof ProviderNotFoundError)) throw error
      }
      return { outcome: 'written', event: null }
    }

    const content = plan?.kind === 'write' ? plan.content : subject.content
    if (content === undefined) throw new Error('a provider write of a live event needs its content')
    if (current !== null) {
      // The pattern is written only when it changed: Graph drops a series' exceptions on every write of it.
      const held = current.type === 'seriesMaster' && current.recurrence ? rruleLines(current.recurrence, current.isAllDay === true, content.timeZone) : null
      // Exclusions are Graph's deleted occurrences read back (a series master has no list of them to write).
      const pattern = content.recurrence?.filter((line) => line.startsWith('RRULE'))
      const recurrence = current.type !== 'occurrence' && current.type !== 'exception' && pattern !== undefined &&
        JSON.stringify(held) !== JSON.stringify(pattern)
      // Likewise its times, which Graph takes as a new timing of the series even when unchanged.
      const times = recurrence || current.type !== 'seriesMaster' || !sameTiming(current, content, calendar.timeZone)
      // Graph drops the exceptions of a series whose pattern is written: they are read first and
      // written again afterwards where their occurrence is still one of the series.
      // (and so does a change of its times: the exceptions move with the series, as they do here).
      const series = current.type === 'seriesMaster' ? contentOf(current, calendar.timeZone) : null
      const kept = (recurrence || times) && series !== null ? await this.#reader.instances(context, current.id) : []
      const patched: GraphEvent = await this.#microsoft.call(context, 'event.update', 'PATCH', `${this.#microsoft.base}/me/events/${encodeURIComponent(current.id)}`,
        graphFieldsOf(pattern === undefined ? content : { ...content, recurrence: pattern }, { recurrence, times }), ifMatch)
      let merged = plan?.kind === 'write' && plan.merged
      if (kept.length > 0 && series !== null) {
        const from = { ...series, recurrence: held ?? [] }
        const deleted = stillDeleted(from, kept, content, this.#now())
        await this.#restoreExceptions(context, current.id, kept, from, { ...content, recurrence: [...content.recurrence ?? [], ...deleted.lines] }, calendar.timeZone)
        // Deletions the backend's rule did not name (its own, or another device's) reach it with the series.
        merged ||= deleted.beyondRule
      }
      return { outcome: merged ? 'merged' : 'written', event: await this.#reader.mapped(context, patched.id === current.id && kept.length > 0 ? await this.#reader.current(context, current.id) ?? patched : patched, calendar), ...(typeof current['@odata.etag'] === 'string' ? { replaced: current['@odata.etag'] } : {}) }
    }
    if (subject.providerEventId !== undefined || subject.seriesProviderEventId !== undefined) {
      throw new ProviderNotFoundError(`Microsoft has no event ${subject.providerEventId === undefined ? 'occurrence' : 'with the linked id'} to change`)
    }
    // A pattern holds no exclusions: a new series' EXDATE occurrences are deleted once it exists.
    const pattern = content.recurrence?.filter((line) => line.startsWith('RRULE'))
    if (pattern !== undefined && pattern.length > 0 && graphRecurrenceOf(pattern, content.startDate, content.timeZone) === null) {
      // Sent without it, the series would come back as one event and its other occurrences be lost here.
      throw new ProviderRejectedError(`Microsoft has no recurrence pattern for ${pattern.join(' ')}`, null)
    }
    const body = { ...graphFieldsOf(pattern === undefined ? content : { ...content, recurrence: pattern }, { recurrence: true }), transactionId: transactionIdFor(context.connectionId, write.eventId) }
    let created: GraphEvent = await this.#microsoft.call(context, 'event.create', 'POST', `${this.#microsoft.base}/me/calendars/${encodeURIComponent(calendar.calendarId)}/events`, body)
    if (pattern !== undefined && pattern.length !== content.recurrence?.length) await this.#deleteExcluded(context, created.id, content)
    // A repeated transactionId answers the first insert, which may predate this change of the event.
    if (write.operation !== 'create') {
      created = await this.#microsoft.call(context, 'event.update', 'PATCH', `${this.#microsoft.base}/me/events/${encodeURIComponent(created.id)}`, graphFieldsOf(content, { recurrence: false }))
    }
    return { outcome: 'inserted', event: await this.#reader.mapped(context, created, calendar) }
  }

  /** The occurrences of a series Graph holds that its rule excludes (EXDATE) are deleted there. */
  async #deleteExcluded (context: ProviderContext, masterId: string, content: EventContent): Promise<void> {
    let series: ReturnType<typeof compileSeries>
    try {
      series = compileSeries({ startDate: content.startDate, endDate: content.endDate, isAllDay: content.isAllDay, timeZone: content.timeZone, rule: content.recurrence ?? [] })
    } catch (error) {
      if (error instanceof RecurrenceRuleError) return
      throw error
    }
    for (const instance of await this.#reader.instances(context, masterId)) {
      const original = content.isAllDay
        ? eventInstant((instance.start?.dateTime ?? '').slice(0, 10), true, content.timeZone)
        : new Date(originalStartOf(instance))
      if (Number.isNaN(original.getTime()) || hasOccurrenceAt(series, original)) continue
      await this.#microsoft.call(context, 'event.delete', 'DELETE', `${this.#microsoft.base}/me/events/${encodeURIComponent(instance.id)}`)
    }
  }

  /**
   * After a series' pattern or times were written: its former exceptions are written again on
   * their occurrence as it moved with the series (the backend's rule, lib/events/series-move.ts:
   * gone where the changed series has no such occurrence), and occurrences the series excludes
   * (EXDATE, deleted at Microsoft before, moved with it) are deleted again, so a "this and
   * following" cut or a move of the series loses nothing.
   */
  async #restoreExceptions (context: ProviderContext, masterId: string, before: GraphEvent[], from: EventContent, to: EventContent, calendarTimeZone: string): Promise<void> {
    const originalOf = originalStartOf
    const mover = exceptionMover(contentTiming(from), contentTiming(to))
    const exceptions = new Map<number, { own: EventContent, times: ExceptionTiming }>()
    for (const instance of before) {
      if (instance.type !== 'exception' || instance.isCancelled === true || mover === null) continue
      const own = contentOf(instance, calendarTimeZone)
      const times = own === null ? null : mover({ originalStartDate: new Date(originalOf(instance)).toISOString(), startDate: own.startDate, endDate: own.endDate })
      if (own !== null && times !== null) exceptions.set(eventInstant(times.originalStartDate, to.isAllDay, to.timeZone).getTime(), { own, times })
    }
    let series: ReturnType<typeof compileSeries> | null = null
    try {
      series = compileSeries({ startDate: to.startDate, endDate: to.endDate, isAllDay: to.isAllDay, timeZone: to.timeZone, rule: to.recurrence ?? [] })
    } catch (error) {
      if (!(error instanceof RecurrenceRuleError)) throw error
    }
    for (const instance of await this.#reader.instances(context, masterId)) {
      const original = originalOf(instance)
      const url = `${this.#microsoft.base}/me/events/${encodeURIComponent(instance.id)}`
      if (series !== null && !to.isAllDay && !hasOccurrenceAt(series, new Date(original))) {
        await this.#microsoft.call(context, 'event.delete', 'DELETE', url)
        continue
      }
      const exception = exceptions.get(original)
      if (exception === undefined) continue
      const { own, times } = exception
      // The series' new text reaches an exception that had its old text, as Graph does for an exception it keeps.
      await this.#microsoft.call(context, 'event.update', 'PATCH', url, graphFieldsOf({ ...own, ...followedFields(from, to, own), startDate: times.startDate, endDate: times.endDate, recurrence: undefined }, { recurrence: false }))
    }
  }
}
