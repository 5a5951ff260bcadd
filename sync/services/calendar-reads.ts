// The jobs that read a connection's calendars: the import (the weeks around today first, then
// every page, resumable from a checkpoint) and the pull of what changed since the last cursor,
// which reads a calendar again when its provider forgot the cursor.
import type { ImportOperation, ProviderEvent } from '../../schemas/sync/index.js'
import { PROVIDER_EVENT_BATCH_MAX } from '../../schemas/sync/provider-events.js'
import type { ConnectionRecord } from '../lib/connections/record.js'
import { importWindow } from '../lib/provider-sync.js'
import { appendsCalendarInvalidation } from '../lib/pull-rule.js'
import type { PullOutcome } from '../lib/pull-rule.js'
import { ProviderCursorExpiredError, ProviderNotFoundError } from '../lib/providers/port.js'
import type { ImportResult, ProviderCalendar, ProviderContext, ProviderEventPage, ProviderPort } from '../lib/providers/port.js'
import type { CalendarFacts, CalendarRecord, ImportCheckpoint } from '../stores/calendars.js'
import type { JobRecord } from '../stores/job-queue.js'
import { calendarOf, jobKeys, NothingToDo, type ConnectionJobs, type SyncEngineParts } from './connection-jobs.js'
import { ENSURE_WATCH, type ConnectionWatches } from './connection-watches.js'

/**
 * An import's progress after a page is recorded at most this often. The backend's bridge reads the
 * feed every few seconds and keeps only a connection's latest progress of each read, so more would
 * be three database writes a page that no tab ever sees. The start, each calendar's end and the
 * completion are always recorded.
 */
export const PAGE_PROGRESS_INTERVAL_MS = 1000

/**
 * An import hands the pages of a pass over together until they hold this many events (or the pass
 * ends, or the next page would pass the batch limit): each batch costs both services a round of
 * fixed work (the backend's lookups and write, a checkpoint), which a page of Microsoft's 500 events
 * or the few of a range's end cost as much as one of 2,000.
 */
const IMPORT_BATCH_EVENTS = 1000

/**
 * A pull of a whole connection (the person's refresh, a tab coming back, a CalDAV poll) looks at the
 * provider's list of calendars when it was last read longer ago than this: a calendar added there is
 * imported, one no longer listed leaves, and names, colours and default reminders follow.
 */
const CALENDAR_LIST_REFRESH_MS = 10 * 60_000

/**
 * The calendars of one connection Sync keeps, the primary first: a CalDAV server may list tens of
 * thousands in one answer, each an import and a pull for a worker. As many as a person can hide in
 * the list (schemas/calendar.ts).
 */
export const CALENDARS_PER_CONNECTION = 500

/** The calendars a connection keeps of those its provider lists (CALENDARS_PER_CONNECTION). */
function keptCalendars (listed: ProviderCalendar[], log: SyncEngineParts['log'], connectionId: string): ProviderCalendar[] {
  if (listed.length <= CALENDARS_PER_CONNECTION) return listed
  log.warn({ connectionId, listed: listed.length, kept: CALENDARS_PER_CONNECTION }, 'the provider lists more calendars than a connection keeps; the rest are left out')
  return [...listed].sort((a, b) => Number(b.primary) - Number(a.primary)).slice(0, CALENDARS_PER_CONNECTION)
}

/** What Sync stores of a calendar its provider lists. */
function factsOf (context: ProviderContext, calendar: ProviderCalendar): CalendarFacts {
  return { connectionId: context.connectionId, userId: context.userId, ...calendar, color: calendar.color ?? null }
}

/** Imports and pulls of a connection's calendars, handed to the backend page by page. */
export class CalendarReads {
  readonly #parts: SyncEngineParts
  readonly #jobs: ConnectionJobs
  readonly #watches: ConnectionWatches

  constructor (parts: SyncEngineParts, jobs: ConnectionJobs, watches: ConnectionWatches) {
    this.#parts = parts
    this.#jobs = jobs
    this.#watches = watches
  }

  async import (job: JobRecord, connection: ConnectionRecord, context: ProviderContext, provider: ProviderPort): Promise<void> {
    if (connection.state !== 'importing') throw new NothingToDo()
    const { calendars, connections, feed, queue, clock } = this.#parts
    const operation: ImportOperation = job.payload.operation === 'repair' ? 'repair' : 'full'
    // A job from before runs were named is its own run.
    const run = job.payload.run ?? job._id.toHexString()
    const [listed, records] = await Promise.all([provider.listCalendars(context), calendars.listByConnection(context.connectionId)])
    const found = keptCalendars(listed, this.#parts.log, context.connectionId)
    const stored = new Map(records.map((record) => [record.calendarId, record]))
    const counts = { calendarsDone: 0, calendarsTotal: found.length, eventsImported: 0 }
    // A run that crashed goes on after the calendars it finished.
    const pending = found.filter((calendar) => stored.get(calendar.calendarId)?.importedInRun !== run)
    counts.calendarsDone = found.length - pending.length
    let recordedAt = clock.now().getTime()
    const recordProgress = async (at = clock.now()): Promise<void> => {
      recordedAt = at.getTime()
      await connections.recordImport(connection, { phase: 'progress', operation, counts: { ...counts } })
    }
    await recordProgress()
    for (const calendar of pending) {
      const before = counts.eventsImported
      await this.#importCalendar(context, provider, calendar, { run, window: true, expiryStreak: 0 }, async (imported, handedAt) => {
        counts.eventsImported = before + imported
        if (handedAt.getTime() - recordedAt >= PAGE_PROGRESS_INTERVAL_MS) await recordProgress(handedAt)
      })
      counts.calendarsDone++
      // An initial import always tells the user's tabs (pull rule).
      await feed.append(context.userId, { kind: 'calendar', connectionId: context.connectionId, calendarId: calendar.calendarId })
      await recordProgress()
    }
    await connections.recordImport(connection, { phase: 'completed', operation, counts: { ...counts } })
    await connections.apply(context.connectionId, { type: 'importFinished' })
    await this.#watches.ensureWatches(provider, context, found)
    // The pull after the import watches again what the import could not (the provider down for a
    // moment): that pull, or its retry once the provider answers.
    await queue.enqueue({ type: 'pull', coalescingKey: jobKeys.pull(context.connectionId), userId: context.userId, connectionId: context.connectionId, payload: { [ENSURE_WATCH]: 'yes' } })
  }

  /**
   * Imports one calendar under a new generation: the weeks around today first (when `window`), then
   * every page of the whole calendar, each page one batch, the last with `complete: true`. A
   * checkpoint after each applied page lets a crashed run go on where it stopped; a replayed page
   * is idempotent at the backend. Returns the events handed over.
   */
  async #importCalendar (
    context: ProviderContext,
    provider: ProviderPort,
    calendar: ProviderCalendar,
    options: { run: string, window: boolean, expiryStreak: number },
    /** After each batch handed over: the events imported so far, and when the batch arrived. */
    progress: (imported: number, handedAt: Date) => Promise<void> = async () => {}
  ): Promise<number> {
    const { calendars, clock } = this.#parts
    let checkpoint: ImportCheckpoint = await calendars.beginImport(factsOf(context, calendar), options.run, clock.now())
    if (!options.window && checkpoint.pass === 'window') checkpoint = { ...checkpoint, pass: 'full' }
    let windowEvents = checkpoint.pass === 'window' ? checkpoint.eventsImported : 0
    const shown = () => Math.max(windowEvents, checkpoint.pass === 'full' ? checkpoint.eventsImported : 0)

    // The full pass reads the window's events again; those unchanged since are not handed over a
    // second time (a resumed run, which has no record of them, sends them again, harmlessly).
    const sentInWindow = new Map<string, string>()
    const versionOf = (event: ProviderEvent) => `${event.etag ?? ''}|${event.updated}`
    // Pages read and not handed over yet, and the page after them (where a resumed run goes on).
    const batchEvents = this.#parts.importBatchEvents ?? IMPORT_BATCH_EVENTS
    let held: ProviderEvent[] = []
    let heldRead = 0
    let heldNext: string | null = null
    // What a batch handed over leaves to record (its checkpoint, the tabs told, the progress shown),
    // recorded while the next batch is on its way; one at a time, in order.
    let recording: Promise<void> = Promise.resolve()
    const hand = async (pass: ImportCheckpoint['pass'], nextPageToken: string | null): Promise<void> => {
      const last = pass === 'full' && nextPageToken === null
      const sending = held.length > 0 || last
        ? this.#jobs.send(context, provider.provider, calendar.calendarId, held, { id: checkpoint.generation, complete: last })
        : Promise.resolve()
      await Promise.all([sending, recording])
      const eventsImported = checkpoint.eventsImported + heldRead
      if (pass === 'window') windowEvents = eventsImported
      checkpoint = pass === 'window' && nextPageToken === null
        ? { ...checkpoint, pass: 'full', pageToken: null, eventsImported: 0 }
        : { ...checkpoint, pass, pageToken: nextPageToken, eventsImported }
      const read = heldRead
      held = []
      heldRead = 0
      const saved = checkpoint
      const imported = shown()
      const handedAt = clock.now()
      recording = (async () => {
        // The last page's checkpoint is the promotion below.
        if (!last) await calendars.saveCheckpoint(context.connectionId, calendar.calendarId, saved)
        // The weeks around today are in: the user's tabs show them now, not once the whole calendar is.
        if (pass === 'window' && nextPageToken === null) await this.#parts.feed.append(context.userId, { kind: 'calendar', connectionId: context.connectionId, calendarId: calendar.calendarId })
        if (read > 0) await progress(imported, handedAt)
      })()
      // Met by the next hand-over or the end of the passes.
      recording.catch(() => {})
    }
    // The window pass's last batch, on its way to the backend while the full pass reads its first
    // page; the full pass hands nothing over before it has arrived.
    let windowHanding: Promise<void> | null = null
    const take = (pass: ImportCheckpoint['pass']) => async (page: ProviderEventPage): Promise<void> => {
      if (pass === 'full' && windowHanding !== null) {
        const handing = windowHanding
        windowHanding = null
        await handing
      }
      const fresh = pass === 'window'
        ? page.events
        : page.events.filter((event) => sentInWindow.get(event.providerEventId) !== versionOf(event))
      if (pass === 'window') for (const event of page.events) sentInWindow.set(event.providerEventId, versionOf(event))
      if (held.length > 0 && held.length + fresh.length > PROVIDER_EVENT_BATCH_MAX) await hand(pass, heldNext)
      held = held.length === 0 ? fresh : held.concat(fresh)
      heldRead += page.events.length
      heldNext = page.nextPageToken
      if (pass === 'window' && page.nextPageToken === null) {
        windowHanding = hand(pass, null)
        // Met by the full pass's first page, or after the full pass below.
        windowHanding.catch(() => {})
      } else if (page.nextPageToken === null || held.length >= batchEvents) {
        await hand(pass, page.nextPageToken)
      }
    }

    const windowPass = checkpoint.pass === 'window'
    let result: ImportResult
    try {
      if (windowPass) {
        await provider.importCalendar(context, calendar, { window: importWindow(clock.now()), pageToken: checkpoint.pageToken }, take('window'))
      }
      // After a window pass the full pass begins at its first page, whether or not the window's
      // last batch (whose checkpoint says so) has arrived yet.
      result = await provider.importCalendar(context, calendar, { pageToken: windowPass ? null : checkpoint.pageToken }, take('full'))
      await recording
    } finally {
      // A full pass that failed before its first page: the window's batch still ends first, and its failure is the one told.
      if (windowHanding !== null) await windowHanding
      // A failed run leaves no write of its record behind to land after its retry has begun.
      await recording.catch(() => {})
    }
    if (result.cursor === null) throw new Error(`the provider gave no sync cursor after importing calendar ${calendar.calendarId}`)
    await calendars.promoteImport(context.connectionId, calendar.calendarId, { cursor: result.cursor, run: options.run, expiryStreak: options.expiryStreak }, clock.now())
    return shown()
  }

  async pull (job: JobRecord, connection: ConnectionRecord, context: ProviderContext, provider: ProviderPort): Promise<void> {
    if (connection.state === 'importing') throw new NothingToDo()
    const { calendars, connections, feed, clock } = this.#parts
    const only = job.payload.calendarId
    const bootstrap = connection.state === 'catchingUp'
    let records = (await calendars.listByConnection(context.connectionId)).filter((record) => only === undefined || record.calendarId === only)
    const listedAt = Math.max(0, ...records.map((record) => record.listedAt?.getTime() ?? 0))
    if (only === undefined && clock.now().getTime() - listedAt >= CALENDAR_LIST_REFRESH_MS) records = await this.#followCalendarList(context, provider, records)
    const dropped = new Set<string>()
    for (const calendar of records) {
      if (calendar.cursor === null) continue
      let outcome: PullOutcome
      try {
        let changed = 0
        let deleted = 0
        const pulled = await provider.pullChanges(context, calendarOf(calendar), calendar.cursor, async (page) => {
          if (page.events.length === 0) return
          const applied = await this.#jobs.send(context, provider.provider, calendar.calendarId, page.events)
          changed += applied.created + applied.updated
          deleted += applied.deleted
        })
        // Saved only now: every page of this pass reached the backend.
        await calendars.recordPull(calendar, pulled.cursor, clock.now())
        outcome = {
          operation: bootstrap ? 'bootstrapCatchUp' : 'incremental',
          changed,
          deleted,
          expiryStreakCleared: calendar.expiryStreak > 0,
          generationPromoted: false
        }
      } catch (error) {
        if (error instanceof ProviderNotFoundError) {
          await this.#dropCalendar(context, calendar)
          dropped.add(calendar.calendarId)
          continue
        }
        if (!(error instanceof ProviderCursorExpiredError)) throw error
        // The provider forgot our cursor: read the calendar again beside the old data; its last page
        // switches to the new generation at once. A crash resumes the same run.
        const imported = await this.#importCalendar(context, provider, calendarOf(calendar), {
          run: `repair-${calendar.generation}-${calendar.expiryStreak}`,
          window: false,
          expiryStreak: calendar.expiryStreak + 1
        })
        outcome = { operation: 'repair', changed: imported, deleted: 0, expiryStreakCleared: false, generationPromoted: true }
      }
      if (appendsCalendarInvalidation(outcome)) {
        await feed.append(context.userId, { kind: 'calendar', connectionId: context.connectionId, calendarId: calendar.calendarId })
      }
    }
    // A pull of one calendar does not end the catch-up of the whole connection.
    if (only === undefined || !bootstrap) await connections.apply(context.connectionId, { type: 'pullSucceeded' })
    if (job.payload[ENSURE_WATCH] !== undefined) await this.#watches.ensureWatches(provider, context, records.filter((record) => record.cursor !== null && !dropped.has(record.calendarId)).map(calendarOf))
  }

  /**
   * The provider's list of calendars now: one added there is imported (the weeks around today
   * first) and watched, one no longer listed leaves with its events, and the others take the
   * provider's name, colour and default reminders. Answers the stored calendars still listed and
   * imported, for the pull to go on with. An empty list is taken for a provider's glitch, never
   * for every calendar gone.
   */
  async #followCalendarList (context: ProviderContext, provider: ProviderPort, records: CalendarRecord[]): Promise<CalendarRecord[]> {
    const { calendars, feed, clock } = this.#parts
    const found = keptCalendars(await provider.listCalendars(context), this.#parts.log, context.connectionId)
    if (found.length === 0) return records
    const listed = new Set(found.map((calendar) => calendar.calendarId))
    for (const record of records) if (!listed.has(record.calendarId)) await this.#dropCalendar(context, record)
    const stored = new Map(records.map((record) => [record.calendarId, record]))
    const added: ProviderCalendar[] = []
    for (const calendar of found) {
      const record = stored.get(calendar.calendarId)
      if (record !== undefined && record.cursor !== null) {
        await calendars.refreshFacts(factsOf(context, calendar), clock.now())
        continue
      }
      // New, or added by a pull that stopped before its import finished: the same run goes on.
      await this.#importCalendar(context, provider, calendar, { run: 'added', window: true, expiryStreak: 0 })
      await feed.append(context.userId, { kind: 'calendar', connectionId: context.connectionId, calendarId: calendar.calendarId })
      added.push(calendar)
    }
    if (added.length > 0) await this.#watches.ensureWatches(provider, context, added)
    return records.filter((record) => listed.has(record.calendarId) && record.cursor !== null)
  }

  /** The calendar is gone at the provider: its events leave the user's data, its channel stops. */
  async #dropCalendar (context: ProviderContext, calendar: CalendarRecord): Promise<void> {
    const { calendars, watches, feed, log } = this.#parts
    await this.#jobs.backend().removeCalendar({ userId: context.userId, connectionId: context.connectionId, calendarId: calendar.calendarId })
    for (const watch of await watches.listByConnection(context.connectionId)) {
      if (watch.calendarId === calendar.calendarId) await this.#watches.stopWatch(watch)
    }
    await calendars.remove(context.connectionId, calendar.calendarId)
    await feed.append(context.userId, { kind: 'calendar', connectionId: context.connectionId, calendarId: calendar.calendarId })
    log.info({ connectionId: context.connectionId }, 'a calendar is gone at the provider; its events were removed')
  }
}
