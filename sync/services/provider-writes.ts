// An own-data change written to the provider: queued per event (the newest report wins), held
// while the connection's grant is revoked, written to the calendar its event is in, and its
// outcome (written, refused, merged) told to the backend.
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { ProviderWriteSubjectSchema } from '../../schemas/sync/index.js'
import { isDatabaseUnavailableError } from '../../stores/database.js'
import type { EventOperation, Provider, ProviderWriteSubject } from '../../schemas/sync/index.js'
import type { ConnectionRecord } from '../lib/connections/record.js'
import { ProviderAuthorizationRevokedError, ProviderRejectedError, ProviderUnavailableError } from '../lib/providers/port.js'
import { WaitForProviderError } from '../lib/jobs/rules.js'
import type { ProviderCalendar, ProviderContext, ProviderPort, WriteResult } from '../lib/providers/port.js'
import { writeIssueOf } from '../lib/write-issues.js'
import type { JobRecord } from '../stores/job-queue.js'
import type { InTransaction } from '../stores/database-calls.js'
import { calendarOf, jobKeys, NothingToDo, type ConnectionJobs, type SyncEngineParts } from './connection-jobs.js'

/** How long an occurrence's write waits for its series' write before it looks again. */
const SERIES_WAIT_MS = 3_000

const subjectCheck = TypeCompiler.Compile(ProviderWriteSubjectSchema)

/** Provider writes of the backend's reported changes. */
export class ProviderWrites {
  readonly #parts: SyncEngineParts
  readonly #jobs: ConnectionJobs

  constructor (parts: SyncEngineParts, jobs: ConnectionJobs) {
    this.#parts = parts
    this.#jobs = jobs
  }

  /**
   * A change reported while its connection's grant is revoked: kept until the user reconnects
   * (authorize), so the backend's own write is never kept from the provider calendar. With
   * `session`, in the caller's transaction.
   */
  async hold (connectionId: string, userId: string, change: { eventId: string, operation: EventOperation, calendarId: string | null, subject?: ProviderWriteSubject | undefined }, options: InTransaction = {}): Promise<void> {
    await this.#parts.held.hold({
      connectionId,
      userId,
      eventId: change.eventId,
      operation: change.operation,
      calendarId: change.calendarId,
      ...(change.subject === undefined ? {} : { subject: change.subject }),
      heldAt: this.#parts.clock.now()
    }, options)
  }

  /** Queues the provider write of a reported change (the newest report of an event wins); with `session`, in the caller's transaction. */
  async queue (connection: ConnectionRecord, change: { eventId: string, operation: EventOperation, calendarId: string | null, subject?: ProviderWriteSubject | undefined }, options: InTransaction = {}): Promise<void> {
    const id = connection._id.toHexString()
    await this.#parts.queue.enqueue({
      type: 'providerWrite',
      coalescingKey: jobKeys.providerWrite(id, change.eventId),
      userId: connection.userId,
      connectionId: id,
      payload: {
        eventId: change.eventId,
        operation: change.operation,
        ...(change.calendarId === null ? {} : { calendarId: change.calendarId }),
        ...(change.subject === undefined ? {} : { subject: JSON.stringify(change.subject) })
      }
    }, options)
  }

  async write (job: JobRecord, _connection: ConnectionRecord, context: ProviderContext, provider: ProviderPort): Promise<void> {
    const { calendars, written, clock, log } = this.#parts
    const { eventId, operation, calendarId } = job.payload
    if (eventId === undefined || (operation !== 'create' && operation !== 'update' && operation !== 'delete')) {
      throw new NothingToDo()
    }
    const subject = job.payload.subject === undefined ? undefined : JSON.parse(job.payload.subject) as unknown
    if (!subjectCheck.Check(subject)) {
      // A report without the event's content cannot be written; the backend sends it with every report.
      log.warn({ jobId: job._id.toHexString() }, 'provider write without a subject skipped')
      throw new NothingToDo()
    }
    // A change goes to the calendar its event is in, and only where this connection holds that
    // calendar: an event of no provider calendar is written nowhere, and a calendar id this
    // connection did not find at its provider is never sent there.
    const record = calendarId === undefined ? null : await calendars.get(context.connectionId, calendarId)
    if (record === null) {
      log.warn({ jobId: job._id.toHexString(), connectionId: context.connectionId }, 'provider write skipped: the event is in no calendar of this connection')
      if (calendarId !== undefined) await this.#writeIssue(context, provider.provider, eventId, 'calendarGone')
      throw new NothingToDo()
    }
    const calendar: ProviderCalendar = calendarOf(record)
    const series = await this.#seriesOf(context, subject)
    if (series === undefined) {
      // An occurrence changed before its series reached the provider waits for the series' own
      // write, rather than going there as an event of its own; with no such write on its way
      // there is nothing to change it in.
      const seriesWrite = await this.#parts.queue.list({ coalescingKey: jobKeys.providerWrite(context.connectionId, subject.seriesEventId ?? '') })
      if (seriesWrite.length === 0) {
        log.warn({ jobId: job._id.toHexString(), connectionId: context.connectionId }, 'occurrence write skipped: its series is not at the provider')
        throw new NothingToDo()
      }
      throw new WaitForProviderError(`the series of occurrence ${eventId} is not at the provider yet`, new Date(clock.now().getTime() + SERIES_WAIT_MS))
    }
    if (series !== null) subject.seriesProviderEventId = series
    const own = await written.get(context.connectionId, eventId)
    const seriesOwn = subject.seriesEventId === undefined ? undefined : await written.get(context.connectionId, subject.seriesEventId)
    let result: WriteResult
    try {
      result = await provider.writeEvent(context, calendar, {
        eventId,
        operation,
        subject,
        ...(own === undefined ? {} : { ownVersion: own.version }),
        ...(own?.updated === undefined ? {} : { ownUpdated: own.updated }),
        ...(own?.providerEventId === undefined ? {} : { ownProviderEventId: own.providerEventId }),
        ...(seriesOwn === undefined ? {} : { seriesOwnVersion: seriesOwn.version })
      })
    } catch (error) {
      if (error instanceof ProviderRejectedError) {
        // Asking again gets the same answer: the event is marked, and a new change of it is written anew.
        log.warn({ jobId: job._id.toHexString(), connectionId: context.connectionId, status: error.status, operation }, 'the provider refused the write; it is not asked again')
        // A deleted event has nothing left here to carry a mark: an earlier one goes with it.
        await this.#writeIssue(context, provider.provider, eventId, operation === 'delete' ? null : error)
        throw new NothingToDo()
      }
      // The connection's state already tells of an outage, a revoked grant or our own database.
      const told = error instanceof ProviderUnavailableError || error instanceof ProviderAuthorizationRevokedError || isDatabaseUnavailableError(error)
      if (!told) await this.#writeIssue(context, provider.provider, eventId, error)
      throw error
    }
    await this.#writeIssue(context, provider.provider, eventId, null)
    if (result.event?.etag !== undefined && result.outcome !== 'providerNewer') {
      await written.record(context.connectionId, eventId, { version: result.event.etag, providerEventId: result.event.providerEventId, lastUpdated: subject.lastUpdated, updated: result.event.updated, ...(result.replaced === undefined ? {} : { replaced: result.replaced }) }, clock.now())
    }
    // The backend links a new provider event to its own (the item carries eventId); a newer version
    // at the provider replaces the change, and a merge brings it what the provider added. Anything else comes back through the next pull, where
    // the backend finds it unchanged.
    if (result.event !== null && (result.outcome === 'inserted' || result.outcome === 'providerNewer' || result.outcome === 'merged')) {
      // An import of the calendar under way may have read past where the provider lists this event
      // before the write reached it; its last page then removes every provider event of the
      // calendar outside its generation. Filed under that generation, the event stays. Asked
      // after the write: an import that begins later lists the event itself.
      const importing = await calendars.importUnderWay(context.connectionId, calendar.calendarId)
      await this.#jobs.send(context, provider.provider, calendar.calendarId, [{ ...result.event, eventId }], importing === null ? undefined : { id: importing, complete: false })
    }
  }

  /**
   * The provider id of an occurrence's series when the report did not carry it (the series was
   * changed here before the backend learnt it): the one our own write of the series got there.
   * Null when there is nothing to find (not an occurrence, or the report named it); undefined when
   * the series has not been written there yet.
   */
  async #seriesOf (context: ProviderContext, subject: ProviderWriteSubject): Promise<string | null | undefined> {
    if (subject.providerEventId !== undefined || subject.seriesProviderEventId !== undefined || subject.originalStartDate === undefined || subject.seriesEventId === undefined) return null
    return (await this.#parts.written.get(context.connectionId, subject.seriesEventId))?.providerEventId
  }

  /**
   * Records why the event's change is not at the provider (`cause`), or that it now is (null). The
   * backend marks the event and the user's tabs hear the connection's new count, once per change
   * of state; the row is written last, so a failure on the way is told again by the job's retry.
   */
  async #writeIssue (context: ProviderContext, provider: Provider, eventId: string, cause: unknown): Promise<void> {
    const { writeIssues, connections, feed, clock } = this.#parts
    const { connectionId, userId } = context
    const previous = await writeIssues.get(connectionId, eventId)
    const issue = cause === null ? null : writeIssueOf(provider, cause, clock.now())
    if (issue === null ? previous === null : previous?.reason === issue.reason && previous.retrying === issue.retrying) return
    const { updated } = await this.#jobs.backend().setWriteState({ userId, connectionId, eventId, issue })
    // An event deleted here meanwhile has nothing left to mark (a refused delete stays in the log).
    const kept = issue !== null && updated
    const count = await writeIssues.count(connectionId) + (kept ? 1 : 0) - (previous === null ? 0 : 1)
    const connection = await connections.get(connectionId)
    if (connection !== null) {
      await feed.append(userId, { kind: 'connection', connectionId, provider, state: connection.state, reason: connection.reason, unsyncedWrites: Math.max(0, count) })
    }
    if (kept) await writeIssues.record({ connectionId, eventId, userId, reason: issue.reason, retrying: issue.retrying, at: new Date(issue.at) })
    else if (previous !== null) await writeIssues.clear(connectionId, eventId)
  }
}
