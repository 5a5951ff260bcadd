import type { FastifyBaseLogger } from 'fastify'
import { SEARCH_PAGE, type EventApplyTo, type EventChangeBodyInput, type EventChangeInput, type SearchQueryInput } from '../schemas/event.js'
import { SyncRequestError, SyncUnavailableError, type SyncClient } from '../clients/sync.js'
import { mintEventId, normalizeEventId, parseEventAddress } from '../lib/events/ids.js'
import { toEventRecord, validateEventChange, type EventRecord } from '../lib/events/record.js'
import { categoryOf, planTransition, reportFor, type PersistencePlan, type TransitionResult } from '../lib/events/transition.js'
import { planOccurrenceDelete } from '../lib/events/apply-to.js'
import { expandableSeries, occurrenceAt } from '../lib/events/range.js'
import { eventChangeEntries } from '../lib/events/change-reports.js'
import { eventInstant } from '../lib/events/time.js'
import { hasOccurrenceAt } from '../lib/events/recurrence.js'
import { eventNotFound, invalidEvent, planned } from '../lib/events/errors.js'
import { gateProviderEffect, type SyncAnswer } from '../lib/events/provider-gate.js'
import { CALENDAR_STAYS, ownProviderFields } from '../lib/events/provider-apply.js'
import { isProviderConnected } from '../lib/provider-connection.js'
import type { EventStore } from '../stores/events.js'
import type { UserStore } from '../stores/users.js'
import type { Outbox } from './outbox.js'
import { decodeSearchCursor, encodeSearchCursor, searchTermsOf } from '../lib/events/search.js'
import { EventRequestError } from '../lib/events/errors.js'
import { ICS_LIMITS, icsOfEvents, importPlanOf, type ExportRange, type ImportedChange } from '../lib/events/ics.js'
import { EVENT_LIMITS } from '../schemas/event.js'

/** What an import did: events stored, events already there from an earlier import, and why others were not. */
export interface ImportResult { imported: number, skipped: number, errors: string[] }

/** Who writes, and when: every record of one request carries the same time. */
export interface Owner { userId: string, now: Date }

/** What an event address (a stored id, or `<seriesId>_<occurrence key>`) points at. */
export type ResolvedEvent =
  | { kind: 'stored', event: EventRecord }
  | { kind: 'occurrence', series: EventRecord, expanded: EventRecord, edit: EventRecord | null }

interface WriteStep {
  plan: PersistencePlan
  touched: Array<EventRecord | null>
  /** The calendar a new event names (the client's choice), with the body path it came by. */
  named?: { calendarId: string, path: string }
}

/** What the event pipeline reads and writes through. */
export interface EventServiceDependencies {
  eventStore: EventStore
  users: Pick<UserStore, 'findById'>
  outbox: Pick<Outbox, 'kick'>
  syncClient: Pick<SyncClient, 'metadata' | 'calendars'>
}

/**
 * The user's events as the routes see them: reads by address, and the write pipeline of the
 * specification (Endpoints, note 3): load the current state, plan the transition (lib/events),
 * let the provider side refuse before anything is written, write own data together with the
 * reports Sync is owed, and hand the reports to the outbox.
 */
export class EventService {
  readonly #store: EventStore
  readonly #dependencies: EventServiceDependencies

  constructor (dependencies: EventServiceDependencies) {
    this.#store = dependencies.eventStore
    this.#dependencies = dependencies
  }

  /** The stored event or the occurrence an address names; null when the user has no such thing. */
  async resolve (userId: string, pathId: string): Promise<ResolvedEvent | null> {
    const address = parseEventAddress(pathId)
    if (address === null) return null
    if (address.kind === 'stored') {
      const event = await this.#store.findById(userId, address.eventId)
      return event === null ? null : { kind: 'stored', event }
    }
    const series = await this.#findSeries(userId, address.seriesId)
    const expanded = series === null ? null : occurrenceAt(series, address.occurrenceKey)
    if (series === null || expanded === null || expanded.originalStartDate === undefined) return null
    const originalStart = eventInstant(expanded.originalStartDate, series.isAllDay, series.timeZone)
    const edit = await this.#store.findOccurrenceEdit(userId, address.seriesId, originalStart)
    return { kind: 'occurrence', series, expanded, edit }
  }

  /** One event or occurrence as a client reads it; cancelled ones do not exist for clients. */
  async get (userId: string, pathId: string): Promise<EventRecord> {
    const resolved = await this.resolve(userId, pathId)
    if (resolved === null) throw eventNotFound()
    const shown = resolved.kind === 'stored' ? resolved.event : resolved.edit ?? resolved.expanded
    if (shown.status === 'cancelled') throw eventNotFound()
    return shown
  }

  async range (userId: string, from: Date, to: Date): Promise<EventRecord[]> {
    return await this.#store.findRange(userId, from, to)
  }

  /**
   * The user's events (singles, series as one event, changed occurrences) found by the words of
   * `query`, in start order, a page at a time; `next` is the cursor of the page after.
   */
  async search (userId: string, query: SearchQueryInput): Promise<{ events: EventRecord[], next: string | null }> {
    const terms = searchTermsOf(query.q)
    const after = query.cursor === undefined ? undefined : decodeSearchCursor(query.cursor)
    const found = await this.#store.search(userId, terms, after, query.limit ?? SEARCH_PAGE.usual)
    return { events: found.events, next: found.next === null ? null : encodeSearchCursor(found.next) }
  }

  /** The .ics file of one calendar (undefined: the user's own) over a range (lib/events/ics.ts). */
  async exportCalendar (userId: string, calendarId: string | undefined, range: ExportRange): Promise<string> {
    const events = await this.#store.findCalendarEvents(userId, calendarId ?? null, range.from, range.to, ICS_LIMITS.exportEvents)
    if (events === null) throw invalidEvent('querystring/end', `must leave at most ${ICS_LIMITS.exportEvents} events in the range; export a shorter one`)
    return icsOfEvents(events, calendarId ?? 'My calendar')
  }

  /**
   * Imports an .ics file into one calendar (undefined: the user's own) through the write path of
   * POST: each event goes to the outbox, and through Sync to the provider of a provider's calendar.
   * Series and single events first, then their occurrences, each group in batches of a POST's size;
   * a batch refused for one of its events is written event by event, naming the refused ones. An
   * event already stored under its id (an earlier import of the same file) is skipped as it is now.
   */
  async importCalendar (owner: Owner, calendarId: string | undefined, text: string, log: FastifyBaseLogger): Promise<ImportResult> {
    const plan = importPlanOf(text, { userId: owner.userId, ...(calendarId === undefined ? {} : { calendarId }) })
    const stored = new Set((await this.#store.findByIds(owner.userId, [...plan.events, ...plan.occurrences].map(({ change }) => change._id))).map((event) => event._id))
    const result: ImportResult = { imported: 0, skipped: 0, errors: plan.errors }
    const failed = new Set<string>()
    const refusal = (error: unknown): string | null => {
      if (!(error instanceof EventRequestError) || error.statusCode !== 400) return null
      // The calendar itself is refused (not one of the user's): nothing of the file can go there.
      if (/\/calendarId /.test(error.message)) throw invalidEvent('querystring/calendarId', error.message.replace(/^\S+ /, ''))
      return error.message.replace(/^body(\/\d+)?\/?/, '').trim()
    }
    for (const group of [plan.events, plan.occurrences]) {
      const fresh: ImportedChange[] = []
      for (const item of group) {
        const seriesId = item.change.recurrence?.eventId
        if (stored.has(item.change._id)) result.skipped++
        else if (seriesId !== undefined && failed.has(seriesId)) result.errors.push(`${item.label}: its series was not imported`)
        else fresh.push(item)
      }
      for (let index = 0; index < fresh.length; index += EVENT_LIMITS.changesPerRequest) {
        const batch = fresh.slice(index, index + EVENT_LIMITS.changesPerRequest)
        try {
          await this.upsert(owner, batch.map(({ change }) => change), log)
          result.imported += batch.length
          continue
        } catch (error) {
          if (refusal(error) === null) throw error
        }
        for (const { change, label } of batch) {
          try {
            await this.upsert(owner, change, log)
            result.imported++
          } catch (error) {
            const reason = refusal(error)
            if (reason === null) throw error
            failed.add(change._id)
            result.errors.push(`${label}: ${reason}`)
          }
        }
      }
    }
    return result
  }

  /** POST: creates or updates each change, all or nothing. */
  async upsert (owner: Owner, body: EventChangeBodyInput, log: FastifyBaseLogger): Promise<void> {
    const changes = Array.isArray(body) ? body : [body]
    const prefix = (index: number) => Array.isArray(body) ? `body/${index}` : 'body'
    const seen = new Set<string>()
    const steps: WriteStep[] = []
    for (const [index, change] of changes.entries()) {
      const step = await this.#planUpsert(owner, change, prefix(index))
      if (seen.has(step.after._id)) throw invalidEvent(`${prefix(index)}/_id`, 'appears twice in one request')
      seen.add(step.after._id)
      steps.push({ plan: step.plan, touched: [step.before, step.after], ...(step.named === undefined ? {} : { named: step.named }) })
    }
    await this.#commit(owner, steps, log)
  }

  /** PUT: updates one stored event, or edits one occurrence of a series. */
  async update (owner: Owner, pathId: string, body: EventChangeInput, log: FastifyBaseLogger): Promise<void> {
    const { _id: bodyId, ...fields } = body
    if (bodyId !== undefined && bodyId.replace(/^optimistic-/, '') !== pathId) throw invalidEvent('body/_id', 'must match the id in the path')
    const address = parseEventAddress(pathId)
    if (address === null) throw eventNotFound()
    if (address.kind === 'stored') {
      const change = { ...fields, _id: address.eventId }
      // Bad input is refused as such, whether or not the event exists.
      this.#validate(change, 'body')
      const before = await this.#store.findById(owner.userId, address.eventId)
      if (before === null || before.status === 'cancelled') throw eventNotFound()
      await this.#commitOne(owner, before, change, log)
      return
    }
    const resolved = await this.resolve(owner.userId, pathId)
    if (resolved === null || resolved.kind !== 'occurrence') throw eventNotFound()
    const { series, expanded, edit } = resolved
    const namedSeries = fields.recurrence?.eventId
    if (fields.recurrence?.rule !== undefined || (namedSeries !== undefined && normalizeEventId(namedSeries) !== address.seriesId)) {
      throw invalidEvent('body/recurrence', 'must be the series of the occurrence in the path')
    }
    if (fields.originalStartDate !== undefined && fields.originalStartDate !== expanded.originalStartDate &&
      eventInstant(fields.originalStartDate, series.isAllDay, series.timeZone).getTime() !==
      eventInstant(expanded.originalStartDate as string, series.isAllDay, series.timeZone).getTime()) {
      throw invalidEvent('body/originalStartDate', 'must be the original start of the occurrence in the path')
    }
    if (edit?.status === 'cancelled') throw eventNotFound()
    const change = {
      ...fields,
      recurrence: { eventId: address.seriesId },
      originalStartDate: edit?.originalStartDate ?? expanded.originalStartDate,
      _id: edit?._id ?? mintEventId()
    }
    this.#validate(change, 'body')
    await this.#commitOne(owner, edit, change, log, series)
  }

  /** DELETE: one event, or for an occurrence of a series the occurrences `applyTo` names. */
  async remove (owner: Owner, pathId: string, applyTo: EventApplyTo, log: FastifyBaseLogger): Promise<void> {
    const resolved = await this.resolve(owner.userId, pathId)
    if (resolved === null) throw eventNotFound()
    let result: TransitionResult
    let touched: Array<EventRecord | null>
    if (resolved.kind === 'stored') {
      const stored = resolved.event
      if (stored.status === 'cancelled') throw eventNotFound()
      const seriesId = stored.recurrence?.eventId
      const series = seriesId === undefined ? null : await this.#findSeries(owner.userId, seriesId)
      result = series === null
        ? planTransition(stored, null, owner.now)
        : planOccurrenceDelete(series, { stored, expanded: stored }, applyTo, owner.now)
      touched = [stored, series]
    } else {
      if (resolved.edit?.status === 'cancelled') throw eventNotFound()
      // The occurrence as expanded carries its series' provider identity; its tombstone is an event of its own.
      const expanded = this.#withProviderFields(null, { ...resolved.expanded, _id: mintEventId(), lastUpdated: owner.now.toISOString() }, resolved.series, 'path')
      result = planOccurrenceDelete(resolved.series, { stored: resolved.edit, expanded }, applyTo, owner.now)
      touched = [resolved.series, resolved.edit]
    }
    const plan = planned(result)
    const cutOff = await this.#editsCutOff(owner.userId, plan)
    await this.#commit(owner, [{ plan, touched }, ...cutOff.map((edit) => ({ plan: { writes: [], report: reportFor(edit, 'delete') }, touched: [edit] }))], log)
  }

  /**
   * The edited occurrences a "this and following" cut removes with the tail of its series: each is
   * reported deleted too, so a write of its edit still on its way to the provider is not carried
   * out after the cut (the provider would hold an occurrence past the series' end, and its copy
   * would come back here).
   */
  async #editsCutOff (userId: string, plan: PersistencePlan): Promise<EventRecord[]> {
    const cuts = plan.writes.flatMap((write) => write.kind === 'deleteInstances' && write.fromOriginalStart !== undefined ? [write] : [])
    if (cuts.length === 0) return []
    const edits = await this.#store.findEditsOf(userId, cuts.map((cut) => cut.seriesId))
    return edits.filter((edit) => edit.status !== 'cancelled' && edit.originalStartDate !== undefined && cuts.some((cut) =>
      cut.seriesId === edit.recurrence?.eventId && eventInstant(edit.originalStartDate as string, edit.isAllDay, edit.timeZone) >= (cut.fromOriginalStart as Date)))
  }

  /** The stored series an occurrence belongs to, or null when the user has no such series. */
  async #findSeries (userId: string, seriesId: string): Promise<EventRecord | null> {
    const series = await this.#store.findById(userId, seriesId)
    return series !== null && categoryOf(series) === 'base' ? series : null
  }

  #validate (change: EventChangeInput, path: string): void {
    const issue = validateEventChange(change)
    if (issue !== null) throw invalidEvent(`${path}${issue.path}`, issue.message, issue.code)
  }

  /** Writes one validated change over what is stored (null: nothing yet). */
  async #commitOne (owner: Owner, before: EventRecord | null, change: EventChangeInput, log: FastifyBaseLogger, series: EventRecord | null = null): Promise<void> {
    const after = this.#withProviderFields(before, toEventRecord(change, owner), series, 'body')
    await this.#commit(owner, [{ plan: planned(planTransition(before, after, owner.now)), touched: [before, after, series] }], log)
  }

  /**
   * Plans a create-or-update of one change (POST). An occurrence must belong to one of the user's
   * series, at a start the series has; an occurrence that already has a stored edit is that edit.
   */
  async #planUpsert (owner: Owner, change: EventChangeInput, path: string): Promise<{ plan: PersistencePlan, after: EventRecord, before: EventRecord | null, named?: WriteStep['named'] }> {
    this.#validate(change, path)
    let after = toEventRecord(change, owner)
    let before = await this.#store.findById(owner.userId, after._id)
    const seriesId = after.recurrence?.eventId
    let series: EventRecord | null = null
    if (seriesId !== undefined && after.originalStartDate !== undefined) {
      series = await this.#findSeries(owner.userId, seriesId)
      if (series === null) throw invalidEvent(`${path}/recurrence/eventId`, 'must name one of your recurring series')
      const originalStart = eventInstant(after.originalStartDate, after.isAllDay, after.timeZone)
      const compiled = expandableSeries(series)
      if (series.isAllDay !== after.isAllDay || compiled === null || !hasOccurrenceAt(compiled, originalStart)) {
        throw invalidEvent(`${path}/originalStartDate`, 'must be the start of an occurrence of the series')
      }
      if (before === null) {
        const edit = await this.#store.findOccurrenceEdit(owner.userId, seriesId, originalStart)
        if (edit !== null) {
          before = edit
          after = { ...after, _id: edit._id, originalStartDate: edit.originalStartDate }
        }
      }
    }
    after = this.#withProviderFields(before, after, series, path)
    const named = before === null && series === null && after.calendarId !== undefined ? { named: { calendarId: after.calendarId, path } } : {}
    return { plan: planned(planTransition(before, after, owner.now)), after, before, ...named }
  }

  /** The change with the provider fields the server keeps (lib/events/provider-apply.ts ownProviderFields). */
  #withProviderFields (before: EventRecord | null, after: EventRecord, series: EventRecord | null, path: string): EventRecord {
    const owned = ownProviderFields(before, after, series)
    if (owned === null) throw invalidEvent(`${path}/calendarId`, CALENDAR_STAYS)
    return owned
  }

  /** Lets the provider side refuse, writes own data with the reports, then hands them to the outbox. */
  async #commit (owner: Owner, steps: WriteStep[], log: FastifyBaseLogger): Promise<void> {
    const touched = steps.flatMap((step) => step.touched).filter((event): event is EventRecord => event !== null)
    await this.#checkProviderSide(owner.userId, touched, steps.flatMap((step) => step.named === undefined ? [] : [step.named]), log)
    const plans = steps.map((step) => step.plan)
    await this.#store.apply(owner.userId, plans, eventChangeEntries(plans, touched, owner.now), owner.now)
    // A provider page may have imported the same occurrence meanwhile, unseen by this plan. The
    // write is stored either way: a failure here is logged, not answered as the write's.
    await this.#store.foldOccurrences(owner.userId, plans.flatMap((plan) => plan.writes.flatMap((write) => write.kind === 'insert' ? [write.event] : [])))
      .catch((error: unknown) => { log.warn({ err: error, userId: owner.userId }, 'occurrence records not folded after a write') })
    // The write is complete once its reports are stored; delivery runs on without the client.
    this.#dependencies.outbox.kick(owner.userId)
  }

  async #checkProviderSide (userId: string, touched: EventRecord[], namedCalendars: NonNullable<WriteStep['named']>[], log: FastifyBaseLogger): Promise<void> {
    const user = await this.#dependencies.users.findById(userId)
    const facts = {
      namedCalendars,
      hasProviderRefreshToken: isProviderConnected(user) || touched.some((event) => event.providerEventId !== undefined),
      calendarIds: [...new Set(touched.flatMap((event) => event.calendarId === undefined ? [] : [event.calendarId]))]
    }
    let gate = gateProviderEffect(facts)
    if (gate.outcome === 'askSync') gate = gateProviderEffect(facts, await this.#askSync(userId))
    if (gate.outcome === 'refuse') throw gate.error
    if (gate.outcome === 'write' && gate.note === 'MissingGoogleRefreshToken') {
      log.info({ userId, reason: gate.note, events: touched.length }, 'provider effect skipped: the user has no provider refresh token')
    }
    if (gate.outcome === 'write' && gate.note === 'SyncUnavailable') {
      log.warn({ userId }, 'Sync unreachable before a provider calendar write; its report waits in the outbox')
    }
  }

  async #askSync (userId: string): Promise<SyncAnswer> {
    try {
      const [metadata, { calendars }] = await Promise.all([this.#dependencies.syncClient.metadata(userId), this.#dependencies.syncClient.calendars(userId)])
      return { kind: 'metadata', metadata, calendars }
    } catch (error) {
      if (error instanceof SyncUnavailableError) return { kind: 'unavailable' }
      if (error instanceof SyncRequestError && error.code === 'MAINTENANCE') return { kind: 'maintenance' }
      throw error
    }
  }
}
