import type { EventContent, ProviderEvent, ProviderEventBatch, ProviderEventBatchResult, WriteIssue } from '../../schemas/sync/index.js'
import type { EventRecord, ProviderFields, ProviderRecord } from './record.js'
import { validateEventChange } from './record.js'
import { dateMillis, eventDateTime, eventInstant, formatEventDate, timedMillis } from './time.js'
import { isoInZone } from '../zone-offsets.js'
import { eventContentOf } from './change-reports.js'
import { sameReminders } from './reminders.js'
import { excludesOccurrenceAt } from './recurrence.js'
import { expandableSeries } from './range.js'

// How a page of a provider calendar's events becomes the user's own data (docs/design.md, "Provider
// data"): every item is an idempotent upsert by (user, calendarId, providerEventId), so replaying
// a page converges; an exception waits for its series master and is linked when it comes; a
// cancelled exception takes its content from the master; the backend's own later change of an
// event wins over an older provider item; and nothing here is reported back to Sync.

/**
 * A stored event as the plan read it. A write made on it applies only while the event is still
 * so: a change made here, a mark Sync set or cleared, or another page's write since the page read
 * it was not weighed by the plan, and the page is planned again (services/provider-events.ts).
 */
export interface StoredVersion { lastUpdated: string, syncIssue: WriteIssue | null }

/** The version of a stored event that a write made on it names. */
export function storedVersionOf (record: EventRecord): StoredVersion {
  return { lastUpdated: record.lastUpdated, syncIssue: (record as ProviderRecord).syncIssue ?? null }
}

export type ProviderWrite =
  | { kind: 'insert', record: ProviderRecord }
  | { kind: 'replace', record: ProviderRecord, unchanged?: StoredVersion }
  /** Provider bookkeeping only: the event as the user sees it does not change. `agreed`: the provider's copy shows the change made here. */
  | { kind: 'touch', eventId: string, set: ProviderFields & { calendarId?: string, providerEventId?: string }, agreed?: true, unchanged?: StoredVersion }
  | { kind: 'delete', eventId: string, unchanged?: StoredVersion }
  | { kind: 'deleteInstances', seriesId: string }

export interface ProviderApplyInput {
  batch: ProviderEventBatch
  /** Stored events of this calendar with a providerEventId of the batch, or named as a master by it. */
  stored: ProviderRecord[]
  /** Stored exceptions waiting for a master that this batch brings. */
  waiting: ProviderRecord[]
  /** The user's own events that batch items name by `eventId` (write-backs to link). */
  linked: EventRecord[]
  /**
   * Stored edits (changed or cancelled occurrences) of the series this batch's exceptions belong
   * to, so an exception finds the edit of its occurrence by series and original start even when
   * the edit has no provider id yet (it was made here); and of the stored series whose new
   * version excludes occurrences (EXDATE), so an edit of an occurrence cancelled there goes.
   */
  edits: EventRecord[]
  /** The user's deletions here of events this batch names (by our id, provider id or series). */
  deleted?: Array<{ eventId: string, providerEventId?: string, deletedAt: Date }>
  mintId: () => string
}

export interface ProviderApplyPlan {
  writes: ProviderWrite[]
  counts: ProviderEventBatchResult
  /** Items refused, with the reason, for the log. */
  rejections: Array<{ providerEventId: string, reason: string }>
  /** Series kept without their expansion, with the reason, for the log. */
  skippedExpansions: Array<{ providerEventId: string, reason: string }>
}

const CONTENT_KEYS = ['title', 'description', 'location', 'startDate', 'endDate', 'isAllDay', 'timeZone', 'status', 'originalStartDate', 'color'] as const

function sameEvent (a: EventRecord, b: EventRecord): boolean {
  if (CONTENT_KEYS.some((key) => a[key] !== b[key])) return false
  if (!sameReminders(a.reminders, b.reminders)) return false
  return JSON.stringify(a.recurrence ?? null) === JSON.stringify(b.recurrence ?? null)
}

/** The content a cancelled exception shows: its master's, moved to the occurrence's original start. */
function contentFromMaster (master: EventRecord, originalStartDate: string): EventContent {
  return {
    title: master.title,
    ...(master.description === undefined ? {} : { description: master.description }),
    ...(master.location === undefined ? {} : { location: master.location }),
    ...(master.reminders === undefined ? {} : { reminders: master.reminders }),
    ...(master.color === undefined ? {} : { color: master.color }),
    ...occurrenceDates(master, originalStartDate),
    isAllDay: master.isAllDay,
    timeZone: master.timeZone
  }
}

/**
 * The dates of the occurrence of `master` that begins at `originalStartDate`: the master's length
 * on from there, written in the master's zone. Timed ones by arithmetic on instants: a DateTime in a
 * zone asks Intl for its offset, which made these dates the largest single cost of applying an
 * import's cancelled occurrences. The rest, and anything that arithmetic cannot write, through DateTime.
 */
function occurrenceDates (master: EventRecord, originalStartDate: string): { startDate: string, endDate: string } {
  if (!master.isAllDay) {
    const [start, end, occurrence] = [timedMillis(master.startDate), timedMillis(master.endDate), timedMillis(originalStartDate)]
    if (start !== null && end !== null && occurrence !== null) {
      const startDate = isoInZone(occurrence, master.timeZone)
      const endDate = isoInZone(occurrence + end - start, master.timeZone)
      if (startDate !== null && endDate !== null) return { startDate, endDate }
    }
  }
  const start = eventDateTime(master.startDate, master.isAllDay, master.timeZone)
  const end = eventDateTime(master.endDate, master.isAllDay, master.timeZone)
  const occurrenceStart = eventDateTime(originalStartDate, master.isAllDay, master.timeZone)
  return { startDate: formatEventDate(occurrenceStart, master.isAllDay), endDate: formatEventDate(occurrenceStart.plus(end.diff(start)), master.isAllDay) }
}

/** A placeholder for a cancelled exception whose master is unknown: hidden until the master comes. */
function placeholderContent (item: ProviderEvent): EventContent {
  const start = item.originalStartDate ?? item.updated
  const isAllDay = /^\d{4}-\d{2}-\d{2}$/.test(start)
  const begin = eventDateTime(start, isAllDay, 'UTC')
  return { title: '', startDate: formatEventDate(begin, isAllDay), endDate: formatEventDate(begin.plus(isAllDay ? { days: 1 } : { minutes: 1 }), isAllDay), isAllDay, timeZone: 'UTC' }
}

/**
 * The contract's `updated` of an item whose provider gave no time: Google's incremental lists
 * carry only the id (and an exception's original start) of a deleted event.
 */
const UNKNOWN_TIME = new Date(0).toISOString()

/**
 * Whether the stored event holds a change made here that is newer than the provider's item. A
 * deletion without a time happened after the provider version the event knows, so only a change
 * made here after that version (its write to the provider decides then, with the provider's real
 * times) keeps it.
 */
function changedHereSince (existing: ProviderRecord, item: ProviderEvent): boolean {
  if (item.status === 'cancelled' && item.updated === UNKNOWN_TIME) return existing.providerUpdated !== undefined && existing.lastUpdated > existing.providerUpdated
  return existing.lastUpdated > item.updated
}

/**
 * The edits here of occurrences that a provider's new version of their series newly excludes: an
 * EXDATE is how another CalDAV client cancels an occurrence, its override going with it. An edit
 * changed here after that version stays (its write to the provider brings the occurrence back).
 */
function editsExcludedBy (before: ProviderRecord, after: ProviderRecord, edits: EventRecord[]): string[] {
  if (after.recurrence?.rule?.some((line) => line.startsWith('EXDATE')) !== true) return []
  const ofSeries = edits.filter((edit) => edit.recurrence?.eventId === before._id && edit.status !== 'cancelled' &&
    edit.originalStartDate !== undefined && edit.lastUpdated <= after.lastUpdated)
  if (ofSeries.length === 0) return []
  const [now, was] = [expandableSeries(after), expandableSeries(before)]
  if (now === null) return []
  return ofSeries.filter((edit) => {
    const at = eventInstant(edit.originalStartDate as string, before.isAllDay, before.timeZone)
    return excludesOccurrenceAt(now, at) && (was === null || !excludesOccurrenceAt(was, at))
  }).map((edit) => edit._id)
}

function emptyCounts (): ProviderEventBatchResult {
  return { created: 0, updated: 0, deleted: 0, unchanged: 0, waiting: 0, superseded: 0, rejected: 0 }
}

export function planProviderBatch (input: ProviderApplyInput): ProviderApplyPlan {
  const { batch } = input
  const counts = emptyCounts()
  const writes: ProviderWrite[] = []
  const rejections: ProviderApplyPlan['rejections'] = []
  const skippedExpansions: ProviderApplyPlan['skippedExpansions'] = []
  const byProviderId = new Map(input.stored.map((record) => [record.providerEventId as string, record]))
  // Each stored event as this plan read it, then as this page's earlier writes leave it: every
  // write of a stored event is guarded, so once one misses, the page's later writes of that
  // event miss too, and none of them lands on a change the plan did not see.
  const versions = new Map<string, StoredVersion>([...input.stored, ...input.waiting, ...input.linked, ...input.edits].map((record) => [record._id, storedVersionOf(record)]))
  const guard = (eventId: string): { unchanged?: StoredVersion } => {
    const version = versions.get(eventId)
    return version === undefined ? {} : { unchanged: version }
  }
  const linkedById = new Map(input.linked.map((record) => [record._id, record]))
  const editKey = (seriesId: string, originalStartDate: string, isAllDay: boolean, timeZone: string): string =>
    `${seriesId}|${eventInstant(originalStartDate, isAllDay, timeZone).getTime()}`
  const editsByOccurrence = new Map(input.edits.flatMap((edit) => edit.recurrence?.eventId === undefined || edit.originalStartDate === undefined
    ? []
    : [[editKey(edit.recurrence.eventId, edit.originalStartDate, edit.isAllDay, edit.timeZone), edit as ProviderRecord] as const]))
  // Masters as they will be after this batch, so exceptions later in the page link to them.
  const masters = new Map<string, ProviderRecord>()
  for (const record of input.stored) if (record.recurrence?.rule !== undefined) masters.set(record.providerEventId as string, record)
  const deletedByEventId = new Map((input.deleted ?? []).map((tombstone) => [tombstone.eventId, tombstone.deletedAt.getTime()]))
  const deletedByProviderId = new Map((input.deleted ?? []).flatMap((tombstone) => tombstone.providerEventId === undefined ? [] : [[tombstone.providerEventId, tombstone.deletedAt.getTime()] as const]))
  /**
   * A provider version from before the user deleted the event here (a page read before the
   * provider learnt of the deletion, or the answer to an earlier write of ours) must not bring it
   * back: the deletion is on its way to the provider. A version changed after the deletion wins.
   */
  const deletedHereLater = (item: ProviderEvent): boolean => {
    const deletedAt = Math.max(
      (item.eventId === undefined ? undefined : deletedByEventId.get(item.eventId)) ?? -Infinity,
      deletedByProviderId.get(item.providerEventId) ?? -Infinity,
      (item.recurringEventId === undefined ? undefined : deletedByProviderId.get(item.recurringEventId)) ?? -Infinity
    )
    // Most pages meet no deletion at all: the version's date is read only when there is one.
    if (deletedAt !== -Infinity && Date.parse(item.updated) <= deletedAt) return true
    // Our own write echoed by the provider carries no change by anyone there, however late it
    // arrived: an event deleted here since stays deleted (the deletion is on its way), unless the
    // same id lives here again (re-created by an undo).
    return item.ownWrite === true && item.eventId !== undefined && deletedByEventId.has(item.eventId) && !linkedById.has(item.eventId)
  }

  const bookkeeping = (item: ProviderEvent): ProviderFields => ({
    connectionId: batch.connectionId,
    providerUpdated: item.updated,
    ...(item.etag === undefined ? {} : { providerEtag: item.etag }),
    ...(item.iCalUID === undefined ? {} : { iCalUID: item.iCalUID }),
    ...(batch.generation === undefined ? {} : { generation: batch.generation })
  })

  const recordFor = (item: ProviderEvent, existing: ProviderRecord | undefined, content: EventContent, extra: Partial<ProviderRecord>): ProviderRecord => {
    const record: ProviderRecord = {
      _id: existing?._id ?? input.mintId(),
      user: batch.userId,
      title: content.title,
      startDate: content.startDate,
      endDate: content.endDate,
      isAllDay: content.isAllDay,
      // An all-day event's dates are what the provider holds; its zone (Google and CalDAV keep none,
      // and fill in the calendar's) stays the one it was made with here.
      timeZone: content.isAllDay && existing?.isAllDay === true ? existing.timeZone : content.timeZone,
      status: item.status,
      origin: existing?.origin ?? 'providerImport',
      priority: existing?.priority ?? 'unassigned',
      calendarId: batch.calendarId,
      providerEventId: item.providerEventId,
      lastUpdated: item.updated,
      ...bookkeeping(item),
      ...extra
    }
    if (content.description !== undefined) record.description = content.description
    if (content.location !== undefined) record.location = content.location
    if (content.reminders !== undefined) record.reminders = content.reminders
    if (content.color !== undefined) record.color = content.color
    // Graph has no event colour (categories are names a person makes): one chosen here stays here.
    else if (batch.provider === 'microsoft' && existing?.color !== undefined) record.color = existing.color
    return record
  }

  const put = (item: ProviderEvent, given: ProviderRecord, existing: ProviderRecord | undefined): void => {
    let record = given
    // A waiting exception is checked as the single event it is until its master comes.
    const checked: ProviderRecord = record.waitingForSeries === undefined ? record : { ...record, originalStartDate: undefined }
    const issue = validateEventChange(checked)
    // A rule this service will not expand does not cost the user the event, nor the page.
    if (issue?.code !== undefined && record.recurrence?.rule !== undefined &&
      validateEventChange({ ...checked, recurrence: { rule: ['RRULE:FREQ=DAILY;COUNT=1'] } }) === null) {
      skippedExpansions.push({ providerEventId: record.providerEventId as string, reason: `${issue.path} ${issue.message}` })
      record = { ...record, expansionSkipped: issue.code }
    } else if (issue !== null) {
      counts.rejected++
      rejections.push({ providerEventId: record.providerEventId as string, reason: `${issue.path} ${issue.message}` })
      return
    }
    byProviderId.set(record.providerEventId as string, record)
    if (record.recurrence?.rule !== undefined) masters.set(record.providerEventId as string, record)
    if (existing === undefined) {
      writes.push({ kind: 'insert', record })
      versions.set(record._id, storedVersionOf(record))
      if (record.waitingForSeries !== undefined) counts.waiting++
      else counts.created++
      return
    }
    if (sameEvent(existing, record) && existing.waitingForSeries === record.waitingForSeries) {
      // A replayed page (or the full pass of an import after its window pass) has nothing to
      // write at all; an echo of our own write brings a new etag to remember.
      const set = bookkeeping(item)
      const agreed = existing.providerBase !== undefined
      if (agreed || (Object.keys(set) as Array<keyof ProviderFields>).some((key) => existing[key] !== set[key])) {
        writes.push({ kind: 'touch', eventId: existing._id, set, ...(agreed ? { agreed } : {}), ...guard(existing._id) })
      }
      counts.unchanged++
      return
    }
    // A mark of a change not at the provider stays until Sync clears it, so the event and the status line's count agree.
    const mark = existing.syncIssue === undefined ? {} : { syncIssue: existing.syncIssue }
    const written: ProviderRecord = { ...record, ...mark, lastUpdated: existing.lastUpdated > record.lastUpdated ? existing.lastUpdated : record.lastUpdated }
    writes.push({ kind: 'replace', record: written, ...guard(existing._id) })
    versions.set(existing._id, storedVersionOf(written))
    if (record.waitingForSeries !== undefined) counts.waiting++
    else counts.updated++
  }

  const applyException = (item: ProviderEvent, known: ProviderRecord | undefined, masterProviderId: string): void => {
    const master = masters.get(masterProviderId)
    const originalStartDate = item.originalStartDate
    if (originalStartDate === undefined) {
      counts.rejected++
      rejections.push({ providerEventId: item.providerEventId, reason: 'an exception without its original start' })
      return
    }
    // The contract's pattern lets through dates no calendar has (February 30th, hour 25).
    if (timedMillis(originalStartDate) === null && dateMillis(originalStartDate) === null) {
      counts.rejected++
      rejections.push({ providerEventId: item.providerEventId, reason: 'an exception whose original start is not a real date' })
      return
    }
    if (master === undefined) {
      const content = item.content ?? placeholderContent(item)
      put(item, recordFor(item, known, content, { waitingForSeries: masterProviderId, originalStartDate }), known)
      return
    }
    // An occurrence is one per series and original start: an edit made here (or linked to another
    // provider id before) is that occurrence, and the provider's exception updates it.
    const existing = known ?? editsByOccurrence.get(editKey(master._id, originalStartDate, master.isAllDay, master.timeZone))
    if (known === undefined && existing !== undefined && changedHereSince(existing, item)) {
      counts.superseded++
      return
    }
    const content = item.content ?? contentFromMaster(master, originalStartDate)
    const record = recordFor(item, existing, content, { recurrence: { eventId: master._id }, originalStartDate })
    delete record.waitingForSeries
    put(item, record, existing)
  }

  // Masters and single events first, so the exceptions of the same page find their master.
  const ordered = [...batch.events].sort((a, b) => Number(a.recurringEventId !== undefined) - Number(b.recurringEventId !== undefined))
  for (const item of ordered) {
    if (!byProviderId.has(item.providerEventId) && deletedHereLater(item)) {
      counts.superseded++
      continue
    }
    const linkedEvent = item.eventId === undefined ? undefined : linkedById.get(item.eventId)
    // An exception links only to an occurrence edit, never to a series: applying it onto its
    // series would replace the series with one occurrence.
    const isException = item.recurringEventId !== undefined
    if (linkedEvent !== undefined && isException && linkedEvent.recurrence?.eventId !== undefined && !byProviderId.has(item.providerEventId)) {
      if (changedHereSince(linkedEvent as ProviderRecord, item)) counts.superseded++
      else applyException(item, linkedEvent as ProviderRecord, item.recurringEventId as string)
      continue
    }
    const copy = byProviderId.get(item.providerEventId)
    if (linkedEvent !== undefined && !isException && copy !== undefined && copy._id !== linkedEvent._id &&
      copy.origin === 'providerImport' && linkedEvent.providerEventId === undefined) {
      // The provider's copy of our own event, read before it named our event (Graph's delta between
      // our insert and Sync's record of it), was imported as an event of its own: ours takes the
      // provider's identity below and the copy goes.
      writes.push({ kind: 'delete', eventId: copy._id, ...guard(copy._id) })
      byProviderId.delete(item.providerEventId)
      counts.deleted++
    }
    if (linkedEvent !== undefined && !isException && !byProviderId.has(item.providerEventId)) {
      // The backend's own event, now also at the provider: it gains the provider's identity.
      writes.push({ kind: 'touch', eventId: linkedEvent._id, set: { ...bookkeeping(item), calendarId: batch.calendarId, providerEventId: item.providerEventId }, ...guard(linkedEvent._id) })
      byProviderId.set(item.providerEventId, { ...linkedEvent, calendarId: batch.calendarId, providerEventId: item.providerEventId })
      counts.unchanged++
      continue
    }
    const existing = byProviderId.get(item.providerEventId)
    if (existing !== undefined && changedHereSince(existing, item)) {
      counts.superseded++
      continue
    }
    if (item.recurringEventId !== undefined) {
      applyException(item, existing, item.recurringEventId)
      continue
    }
    if (item.status === 'cancelled') {
      if (existing !== undefined) {
        writes.push({ kind: 'delete', eventId: existing._id, ...guard(existing._id) })
        if (existing.recurrence?.rule !== undefined) writes.push({ kind: 'deleteInstances', seriesId: existing._id })
        byProviderId.delete(item.providerEventId)
        masters.delete(item.providerEventId)
        counts.deleted++
      } else {
        counts.unchanged++
      }
      continue
    }
    if (item.content === undefined) {
      counts.rejected++
      rejections.push({ providerEventId: item.providerEventId, reason: 'a confirmed event without content' })
      continue
    }
    const record = recordFor(item, existing, item.content, item.content.recurrence === undefined ? {} : { recurrence: { rule: item.content.recurrence } })
    put(item, record, existing)
    if (existing?.recurrence?.rule !== undefined && byProviderId.get(item.providerEventId) !== existing) {
      for (const eventId of editsExcludedBy(existing, record, input.edits)) {
        writes.push({ kind: 'delete', eventId, ...guard(eventId) })
        counts.deleted++
      }
    }
  }

  // Exceptions that waited for a master this page brought are linked to it now.
  for (const waiting of input.waiting) {
    const masterProviderId = waiting.waitingForSeries
    // Items of this page were handled above, with whatever master the page had.
    if (masterProviderId === undefined || !masters.has(masterProviderId) || batch.events.some((item) => item.providerEventId === waiting.providerEventId)) continue
    const item: ProviderEvent = {
      providerEventId: waiting.providerEventId as string,
      updated: waiting.providerUpdated ?? waiting.lastUpdated,
      status: waiting.status,
      recurringEventId: masterProviderId,
      ...(waiting.originalStartDate === undefined ? {} : { originalStartDate: waiting.originalStartDate }),
      ...(waiting.status === 'cancelled' ? {} : { content: { title: waiting.title, startDate: waiting.startDate, endDate: waiting.endDate, isAllDay: waiting.isAllDay, timeZone: waiting.timeZone, ...(waiting.description === undefined ? {} : { description: waiting.description }), ...(waiting.location === undefined ? {} : { location: waiting.location }), ...(waiting.reminders === undefined ? {} : { reminders: waiting.reminders }), ...(waiting.color === undefined ? {} : { color: waiting.color }) } }),
      ...(waiting.providerEtag === undefined ? {} : { etag: waiting.providerEtag }),
      ...(waiting.iCalUID === undefined ? {} : { iCalUID: waiting.iCalUID })
    }
    applyException(item, waiting, masterProviderId)
  }

  return { writes, counts, rejections, skippedExpansions }
}

const PROVIDER_BOOKKEEPING = ['connectionId', 'iCalUID', 'providerEtag', 'providerUpdated', 'generation', 'waitingForSeries', 'syncIssue'] as const

/**
 * What a person's change of a stored event takes from the event as stored when it is written, not
 * as it was read when the change was planned (ownProviderFields): a provider page may have written
 * them in between (a re-import's generation, a new etag, Sync's link or mark), and the change
 * would otherwise undo that.
 */
export const PROVIDER_COPY_FIELDS = ['calendarId', 'providerEventId', ...PROVIDER_BOOKKEEPING] as const

/**
 * Two stored records of one occurrence, made at the same moment from both sides: the user's own
 * edit (its report to the provider on its way, no provider id yet) and the provider's exception of
 * that occurrence, imported by a page planned before the edit was stored (or stored while the edit
 * was being planned). Folded into the own edit, which keeps its id and takes the provider's
 * identity, with the provider's version as the base its write is merged against; its content is the
 * provider's when that version is the newer one, as a page read after the edit would have decided.
 * Null when the records are not such a pair (nothing to fold).
 */
export function foldOccurrence (records: ProviderRecord[]): { keep: ProviderRecord, drop: string[] } | null {
  const own = records.filter((record) => record.providerEventId === undefined)
  const imported = records.filter((record) => record.providerEventId !== undefined)
    .sort((a, b) => (b.providerUpdated ?? b.lastUpdated).localeCompare(a.providerUpdated ?? a.lastUpdated))
  const [mine] = own
  const [theirs] = imported
  if (own.length !== 1 || mine === undefined || theirs === undefined) return null
  const theirsNewer = (theirs.providerUpdated ?? theirs.lastUpdated) > mine.lastUpdated
  const content = theirsNewer ? Object.fromEntries([...CONTENT_KEYS, 'reminders' as const].flatMap((key) => theirs[key] === undefined ? [] : [[key, theirs[key]]])) : {}
  const bookkeeping: ProviderFields = Object.fromEntries(PROVIDER_BOOKKEEPING.flatMap((key) => theirs[key] === undefined ? [] : [[key, theirs[key]]]))
  const keep: ProviderRecord = {
    ...mine,
    ...content,
    ...(theirsNewer ? { lastUpdated: theirs.lastUpdated } : {}),
    ...bookkeeping,
    calendarId: theirs.calendarId as string,
    providerEventId: theirs.providerEventId as string,
    providerBase: eventContentOf(theirs)
  }
  // Content the provider's copy left out is the provider's too. A colour only when the provider's
  // copy had one before: Graph holds no event colour, so its copy never has one, and one chosen
  // here stays here (as planProviderBatch keeps it through Graph's changes).
  if (theirsNewer) for (const key of ['description', 'location', 'reminders'] as const) if (theirs[key] === undefined) delete keep[key]
  if (theirsNewer && theirs.color === undefined && theirs.providerBase?.color !== undefined) delete keep.color
  return { keep, drop: imported.map((record) => record._id) }
}

/** Why a change is refused for naming a calendar the event is not in. */
export const CALENDAR_STAYS = 'must be the calendar the event is in: an event stays in its calendar (create it in the other calendar and delete this one)'

/**
 * The provider fields of an event a person changes are the server's, never the client's copy:
 * a client sends back what it read, and a copied provider id on a new event (an occurrence's own
 * edit, the new series of "this and following") would name the provider event of another stored
 * event. So a change keeps what is stored of the event's provider copy (its calendar, provider
 * id and bookkeeping, so the next page from the provider still finds it); an occurrence's first
 * edit is in its series' calendar; a new event is in the calendar the client names, with no
 * provider identity until Sync links the one the provider gives it. Null when the change names
 * another calendar than the one the event is in.
 */
export function ownProviderFields (before: EventRecord | null, after: EventRecord, series: EventRecord | null = null): EventRecord | null {
  const kept: ProviderRecord = { ...after }
  delete kept.providerEventId
  const home = before ?? series
  if (home === null) return kept
  if (after.calendarId !== undefined && after.calendarId !== home.calendarId) return null
  if (home.calendarId === undefined) return kept
  kept.calendarId = home.calendarId
  if (before === null) return kept
  const previous = before as ProviderRecord
  if (previous.providerEventId !== undefined) kept.providerEventId = previous.providerEventId
  const bookkeeping: ProviderFields = Object.fromEntries(PROVIDER_BOOKKEEPING.flatMap((key) => previous[key] === undefined ? [] : [[key, previous[key]]]))
  // The provider's version this change is made on: the last one agreed, else the event as it was.
  const base = previous.providerEventId === undefined ? {} : { providerBase: previous.providerBase ?? eventContentOf(previous) }
  return { ...kept, ...bookkeeping, ...base }
}
