import type { FastifyBaseLogger } from 'fastify'
import type { ProviderCalendarRemoval, ProviderEventBatch, ProviderEventBatchResult, ProviderWriteState } from '../schemas/sync/index.js'
import { planProviderBatch } from '../lib/events/provider-apply.js'
import { mintEventId } from '../lib/events/ids.js'
import { isDuplicateKeyError, PROVIDER_PAGE_DEADLINE_MS } from '../stores/database.js'
import type { EventStore } from '../stores/events.js'
import type { UserStore } from '../stores/users.js'

export interface ProviderEvents {
  /** Applies one page of a provider calendar's events to the user's data (lib/events/provider-apply.ts). */
  applyBatch: (batch: ProviderEventBatch, log: FastifyBaseLogger) => Promise<ProviderEventBatchResult>
  remove: (removal: ProviderCalendarRemoval) => Promise<number>
  /** Marks the event whose change its provider does not have, or clears the mark; false when the event is gone. */
  setWriteState: (state: ProviderWriteState) => Promise<boolean>
}

/** A page of provider changes met events changed since it read them: planned again, it weighs those changes. */
class ProviderPageStaleError extends Error {
  constructor () {
    super('a provider page met events changed since it read them')
    this.name = 'ProviderPageStaleError'
  }
}

/** How often a page is planned, when another page or the person changed its events between its read and its write. */
const PAGE_PLAN_ATTEMPTS = 3

// What the Sync service learns from providers reaches the user's calendar here. Sync then appends
// the invalidations that tell the user's tabs; the backend publishes nothing itself.
export function createProviderEvents (store: EventStore, users: Pick<UserStore, 'recordProviderConnection' | 'forgetProviderConnection'>): ProviderEvents {
  async function applyBatch (batch: ProviderEventBatch, log: FastifyBaseLogger): Promise<ProviderEventBatchResult> {
    // What the earlier plans of a page planned again wrote: the next plan finds it stored as
    // unchanged, and Sync, which tells the user's tabs of what a page changed, must still hear it.
    const earlier = { created: 0, updated: 0, deleted: 0 }
    for (let attempt = 1; ; attempt++) {
      try {
        const { counts, missed } = await applyOnce(batch, log)
        if (missed === null) return { ...counts, created: counts.created + earlier.created, updated: counts.updated + earlier.updated, deleted: counts.deleted + earlier.deleted }
        if (attempt === PAGE_PLAN_ATTEMPTS) throw new ProviderPageStaleError()
        // Its inserts were all written (one already stored ends the bulk write with an error instead).
        earlier.created += counts.created
        earlier.updated += Math.max(0, counts.updated - missed.changes)
        earlier.deleted += Math.max(0, counts.deleted - missed.deletions)
      } catch (error) {
        // Another page brought the same new event meanwhile (an import beside a pull, two Sync
        // processes) and stored it first: planned again, this page finds it stored.
        if (!isDuplicateKeyError(error) || attempt === PAGE_PLAN_ATTEMPTS) throw error
      }
    }
  }

  /**
   * Plans a page from what is stored and writes it. `missed` (null when none): writes not made
   * because the person, Sync or another page changed their event between the read and the write;
   * the rest is written, and the page is to be planned again from what is stored now.
   */
  async function applyOnce (batch: ProviderEventBatch, log: FastifyBaseLogger): Promise<{ counts: ProviderEventBatchResult, missed: { changes: number, deletions: number } | null }> {
    const providerIds = batch.events.map((item) => item.providerEventId)
    const masterIds = [...new Set(batch.events.flatMap((item) => item.recurringEventId === undefined ? [] : [item.recurringEventId]))]
    // Only a series master can release exceptions that wait for it.
    const seriesInBatch = batch.events.flatMap((item) => item.content?.recurrence === undefined ? [] : [item.providerEventId])
    const linkedIds = batch.events.flatMap((item) => item.eventId === undefined ? [] : [item.eventId])
    const [stored, waiting, linked, deleted] = await Promise.all([
      store.findByProviderIds(batch.userId, batch.calendarId, [...new Set([...providerIds, ...masterIds])]),
      store.findWaitingFor(batch.userId, batch.calendarId, seriesInBatch),
      store.findByIds(batch.userId, linkedIds),
      store.findTombstones(batch.userId, batch.calendarId, linkedIds, [...new Set([...providerIds, ...masterIds])])
    ])
    // The stored edits of the series whose exceptions this page brings, matched by original start,
    // and of the series it brings with exclusions, which may cancel an edited occurrence.
    const excluding = new Set(batch.events.flatMap((item) => item.content?.recurrence?.some((line) => line.startsWith('EXDATE')) === true ? [item.providerEventId] : []))
    const named = new Set([...masterIds, ...excluding])
    const seriesWithEdits = stored.filter((record) => record.recurrence?.rule !== undefined && named.has(record.providerEventId as string)).map((record) => record._id)
    const edits = await store.findEditsOf(batch.userId, seriesWithEdits)
    const plan = planProviderBatch({ batch, stored, waiting, linked, edits, deleted, mintId: mintEventId })
    const supersede = batch.complete === true && batch.generation !== undefined
      ? { calendarId: batch.calendarId, connectionId: batch.connectionId, generation: batch.generation }
      : undefined
    const written = await store.applyProviderWrites(batch.userId, plan.writes, supersede)
    // An edit of one of these occurrences stored here meanwhile, unseen by the plan, takes them in.
    // Also when the page is planned again: the next plan finds these inserts stored, and inserts nothing.
    const folding = store.foldOccurrences(batch.userId, plan.writes.flatMap((write) => write.kind === 'insert' ? [write.record] : []), PROVIDER_PAGE_DEADLINE_MS)
    if (written.missed !== null) {
      await folding
      return { counts: plan.counts, missed: written.missed }
    }
    // Every page names its connection: this is how the backend learns of a connection made in Sync.
    await Promise.all([folding, users.recordProviderConnection(batch.userId, batch.connectionId)])
    for (const rejection of plan.rejections) {
      log.warn({ userId: batch.userId, calendarId: batch.calendarId, ...rejection }, 'provider event not applied')
    }
    for (const skipped of plan.skippedExpansions) {
      log.warn({ userId: batch.userId, calendarId: batch.calendarId, ...skipped }, 'provider series kept without its occurrences')
    }
    return { counts: { ...plan.counts, deleted: plan.counts.deleted + written.superseded }, missed: null }
  }

  return {
    applyBatch,
    remove: async (removal: ProviderCalendarRemoval) => {
      const removed = await store.removeProviderEvents(removal.userId, removal.connectionId, removal.calendarId)
      // Without a calendar, the whole connection's calendars went: the connection is gone.
      if (removal.calendarId === undefined) await users.forgetProviderConnection(removal.userId, removal.connectionId)
      return removed
    },
    setWriteState: async (state: ProviderWriteState) => await store.setSyncIssue(state.userId, state.eventId, state.issue)
  }
}
