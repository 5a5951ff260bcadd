// Writes to the account that the server has not taken yet, kept in browser storage so that none is
// lost to a dropped connection, a refusal or a reload. Each is sent as the requests it was made
// with, ids included: the events API is idempotent on a client-chosen id (POST with an existing id
// replaces, PUT replaces, a DELETE of what is gone is done), so a request sent twice, by a retry
// or by a second tab, stores the event once. Writes go in the order they were made; a write waits
// behind an earlier unsent one to the same event or series. An answer asking for a wait (a 429, or
// a 503 with Retry-After) holds the account's writes for the wait the server named; they then go
// again by themselves, in order.
import { askedWaitMs } from './retry-after.js'
import { readJson, type KeyValueStore } from './storage.js'
import { parseOccurrenceId, seriesIdOf, type EventChange } from './events.js'
import { shownOn, type Effect } from './optimistic.js'

export const PENDING_WRITES_KEY = 'pendingWrites'

export interface WriteStep {
  method: 'POST' | 'PUT' | 'DELETE'
  path: string
  body?: EventChange
  query?: Record<string, string>
}

/**
 * queued: not sent yet (or being sent); waiting: no connection (or no session), sent again when it
 * returns; delayed: the server asked to wait (429, or 503 with Retry-After), sent again by itself at
 * `retryAt`; failed: the server refused, the person retries or discards; sent: the server has it,
 * kept until the lists are read again so the grid does not flicker back.
 */
type WriteState = 'queued' | 'waiting' | 'delayed' | 'failed' | 'sent'

/** What a delayed write's event says. */
const DELAYED_REASON = 'Not saved yet: the server asked to wait. It is sent again by itself.'

/** How many waits a server may ask of one write before it is marked not saved (with Retry). */
export const MAX_AUTOMATIC_RETRIES = 5
/** A longer wait than this is not waited out by itself: the write is marked not saved, with Retry. */
const MAX_AUTOMATIC_WAIT_MS = 10 * 60_000

export interface PendingWrite {
  seq: number
  userId: string
  effect: Effect
  steps: WriteStep[]
  /** Steps the server has answered (a retry goes on from there). */
  done: number
  state: WriteState
  /** Why it is not saved, in a sentence, for waiting, delayed and failed writes. */
  reason?: string
  /** Delayed: when it goes again (milliseconds since the epoch). */
  retryAt?: number
  /** The waits (429) the server has asked of this write so far. */
  delays?: number
}

export interface PendingData {
  version: 1
  nextSeq: number
  writes: PendingWrite[]
}

export const EMPTY_PENDING: PendingData = { version: 1, nextSeq: 1, writes: [] }

export function loadPending (store: KeyValueStore): PendingData {
  const data = readJson<PendingData>(store, PENDING_WRITES_KEY)
  if (data === null || data.version !== 1 || !Array.isArray(data.writes) || typeof data.nextSeq !== 'number') return EMPTY_PENDING
  return data
}

export function savePending (store: KeyValueStore, data: PendingData): void {
  if (data.writes.length === 0) store.removeItem(PENDING_WRITES_KEY)
  else store.setItem(PENDING_WRITES_KEY, JSON.stringify(data))
}

function withoutId (change: EventChange): EventChange {
  const { _id: _ignored, ...fields } = change
  return fields
}

/** The requests of a change, in order (the events API's routes, see docs/events.md). */
export function stepsOf (effect: Effect): WriteStep[] {
  if (effect.kind === 'delete') {
    const path = `/event/${effect.event._id}`
    return [seriesIdOf(effect.event) === null ? { method: 'DELETE', path } : { method: 'DELETE', path, query: { applyTo: effect.applyTo } }]
  }
  const { plan } = effect
  switch (plan.kind) {
    case 'create': return [{ method: 'POST', path: '/event', body: plan.change }]
    // The path names the event; a body _id must match it, so it is left out.
    case 'replace': return [{ method: 'PUT', path: `/event/${plan.id}`, body: withoutId(plan.change) }]
    case 'split': return [
      { method: 'DELETE', path: `/event/${plan.deleteId}`, query: { applyTo: 'thisAndFollowing' } },
      { method: 'POST', path: '/event', body: plan.create }
    ]
  }
}

export function enqueue (data: PendingData, userId: string, effect: Effect): PendingData {
  // While the server has the account wait, a new write waits behind the held ones (order is kept).
  const retryAt = nextRetryAt(data, userId)
  const write: PendingWrite = retryAt === null
    ? { seq: data.nextSeq, userId, effect, steps: stepsOf(effect), done: 0, state: 'queued' }
    : { seq: data.nextSeq, userId, effect, steps: stepsOf(effect), done: 0, state: 'delayed', reason: DELAYED_REASON, retryAt }
  return { ...data, nextSeq: data.nextSeq + 1, writes: [...data.writes, write] }
}

/** The events and series a write touches: two writes sharing one must go in order. */
function keysOf (write: PendingWrite): string[] {
  const keys = new Set<string>(shownOn(write.effect))
  if (write.effect.kind === 'delete') {
    keys.add(write.effect.event._id)
    const series = seriesIdOf(write.effect.event)
    if (series !== null) keys.add(series)
  } else {
    const plan = write.effect.plan
    if (plan.kind === 'replace') keys.add(parseOccurrenceId(plan.id)?.seriesId ?? plan.id)
    if (plan.kind === 'replace' && plan.change.recurrence?.eventId !== undefined) keys.add(plan.change.recurrence.eventId)
    if (plan.kind === 'split') keys.add(parseOccurrenceId(plan.deleteId)?.seriesId ?? plan.deleteId)
  }
  return [...keys]
}

function sharesKey (a: PendingWrite, b: PendingWrite): boolean {
  const keys = new Set(keysOf(a))
  return keysOf(b).some((key) => keys.has(key))
}

function unsent (write: PendingWrite): boolean {
  return write.state !== 'sent'
}

/** The user's writes the server has not taken, oldest first. */
export function unsentOf (data: PendingData, userId: string): PendingWrite[] {
  return data.writes.filter((write) => write.userId === userId && unsent(write)).sort((a, b) => a.seq - b.seq)
}

/**
 * The next write to send: the oldest queued one with no earlier unsent write to the same event.
 * None while the server has the account wait (a delayed write): the rate limit is the account's,
 * and what goes after the wait goes in the order it was made.
 */
export function nextToSend (data: PendingData, userId: string): PendingWrite | null {
  const writes = unsentOf(data, userId)
  if (writes.some((write) => write.state === 'delayed')) return null
  for (const [index, write] of writes.entries()) {
    if (write.state !== 'queued') continue
    if (writes.slice(0, index).some((earlier) => sharesKey(earlier, write))) continue
    return write
  }
  return null
}

function update (data: PendingData, seq: number, change: (write: PendingWrite) => PendingWrite): PendingData {
  return { ...data, writes: data.writes.map((write) => write.seq === seq ? change(write) : write) }
}

/** One step of the write answered: the write is sent once its last step is. */
export function stepDone (data: PendingData, seq: number): PendingData {
  return update(data, seq, (write) => {
    const done = write.done + 1
    const { reason: _reason, retryAt: _retryAt, delays: _delays, ...rest } = write
    return done >= write.steps.length ? { ...rest, done, state: 'sent' } : { ...rest, done, state: 'queued' }
  })
}

/** What a failed request means for its write. */
export type Failure =
  | { kind: 'network' }
  /** `retryAfter`: the answer's Retry-After header, as it came. */
  | { kind: 'status', status: number, code?: string, message: string, retryAfter?: string | null }

export type Outcome =
  | { state: 'done' }
  | { state: 'waiting' | 'failed', reason: string }
  | { state: 'delayed', reason: string, retryAt: number }

/**
 * `now` and `delays` (the waits this write was already asked for) decide what an answer asking for
 * a wait (askedWaitMs: a 429, or a 503 with Retry-After) means: it is waited out and sent again by
 * itself, up to MAX_AUTOMATIC_RETRIES times and for waits up to MAX_AUTOMATIC_WAIT_MS; otherwise it
 * is refused like any other answer.
 */
export function outcomeOf (step: WriteStep, failure: Failure, now = Date.now(), delays = 0): Outcome {
  if (failure.kind === 'network') return { state: 'waiting', reason: 'Not saved yet: no connection. It is sent when the connection returns.' }
  const { status, code } = failure
  // Gone already: what the deletion wanted (a retry after an answer that never arrived, or another tab).
  if (step.method === 'DELETE' && status === 404) return { state: 'done' }
  if (status === 401) return { state: 'waiting', reason: 'Not saved yet: sign in again to send it.' }
  if (code === 'CONNECTION_REVOKED' || status === 410) return { state: 'failed', reason: 'Not saved: the calendar connection was revoked. Reconnect it, then retry.' }
  if (code === 'MAINTENANCE') return { state: 'failed', reason: 'Not saved: provider calendars are in maintenance. Retry later.' }
  const asked = askedWaitMs(failure, now)
  if (asked !== null && asked <= MAX_AUTOMATIC_WAIT_MS && delays < MAX_AUTOMATIC_RETRIES) return { state: 'delayed', reason: DELAYED_REASON, retryAt: now + asked }
  if (status === 429) return { state: 'failed', reason: 'Not saved: too many changes at once (429). Retry in a moment.' }
  if (status >= 500) return { state: 'failed', reason: `Not saved: the server could not take it (${status}). Retry in a moment.` }
  return { state: 'failed', reason: refusalReason(status, code) }
}

/**
 * A refusal in words for the person who made the change: the API's codes (docs/events.md), never
 * its message, which names ids and fields.
 */
const REFUSALS: Record<string, string> = {
  EVENT_ID_TAKEN: 'Not saved: this event was being saved from another tab or device at the same time. Retry to send it again.',
  EVENT_CHANGED: 'Not saved: this event was changed or deleted elsewhere in the meantime. Discard to see it as it is now.',
  EVENT_NOT_FOUND: 'Not saved: this event is no longer in your calendar; it may have been deleted elsewhere.',
  EVENT_INVALID: 'Not saved: the calendar did not accept the event\'s dates or repeat. Discard, then make the change again.',
  FST_ERR_VALIDATION: 'Not saved: the calendar did not accept the event\'s details. Discard, then make the change again.',
  EVENT_CHANGE_NOT_ALLOWED: 'Not saved: this kind of change cannot be made to this event. Discard it and make the change another way.',
  BILLING_REQUIRED: 'Not saved: your calendar is read-only until you subscribe.'
}

function refusalReason (status: number, code: string | undefined): string {
  const known = code === undefined ? undefined : REFUSALS[code]
  if (known !== undefined) return known
  if (status === 400) return REFUSALS['FST_ERR_VALIDATION'] as string
  if (status === 404) return REFUSALS['EVENT_NOT_FOUND'] as string
  if (status === 403) return 'Not saved: this account may not make this change.'
  return `Not saved: the server refused this change (${status}). Retry, or discard it.`
}

export function stepFailed (data: PendingData, seq: number, outcome: Exclude<Outcome, { state: 'done' }>): PendingData {
  return update(data, seq, (write) => {
    const { retryAt: _retryAt, ...rest } = write
    if (outcome.state === 'delayed') return { ...rest, state: 'delayed', reason: outcome.reason, retryAt: outcome.retryAt, delays: (write.delays ?? 0) + 1 }
    return { ...rest, state: outcome.state, reason: outcome.reason }
  })
}

/**
 * The server asked to wait until `retryAt` (429 or 503): every queued write of the user waits with the
 * refused one, so that after the wait they go again in the order they were made.
 */
export function waitForServer (data: PendingData, userId: string, retryAt: number): PendingData {
  return { ...data, writes: data.writes.map((write) => write.userId === userId && write.state === 'queued' ? { ...write, state: 'delayed', reason: DELAYED_REASON, retryAt } : write) }
}

/** When the user's delayed writes go again (the earliest), or null when none is delayed. */
export function nextRetryAt (data: PendingData, userId: string): number | null {
  let at: number | null = null
  for (const write of data.writes) {
    if (write.userId === userId && write.state === 'delayed' && write.retryAt !== undefined && (at === null || write.retryAt < at)) at = write.retryAt
  }
  return at
}

/** The wait is over: the user's delayed writes due by `now` are queued again (in their order). */
export function resumeDelayed (data: PendingData, userId: string, now: number): PendingData {
  return { ...data, writes: data.writes.map((write) => write.userId === userId && write.state === 'delayed' && (write.retryAt ?? 0) <= now ? requeued(write) : write) }
}

/** No connection: every queued write of the user waits for it too, rather than each failing in turn. */
export function waitForConnection (data: PendingData, userId: string, reason: string): PendingData {
  return { ...data, writes: data.writes.map((write) => write.userId === userId && write.state === 'queued' ? { ...write, state: 'waiting', reason } : write) }
}

/** The connection (or the session) is back: waiting writes are sent again, in order. */
export function resumeWaiting (data: PendingData, userId: string): PendingData {
  return { ...data, writes: data.writes.map((write) => write.userId === userId && write.state === 'waiting' ? requeued(write) : write) }
}

function requeued (write: PendingWrite): PendingWrite {
  const { reason: _reason, retryAt: _retryAt, ...rest } = write
  return { ...rest, state: 'queued' }
}

/** Sent again now. A delayed write ends the whole wait of its user (they go in order). */
export function retry (data: PendingData, seq: number): PendingData {
  const target = data.writes.find((write) => write.seq === seq)
  if (target?.state === 'delayed') return resumeDelayed(data, target.userId, Infinity)
  // The person asked: the server's waits are counted afresh.
  return update(data, seq, (write) => {
    if (!unsent(write)) return write
    const { delays: _delays, ...rest } = requeued(write)
    return rest
  })
}

/** Gives up a write and the later unsent writes to the same events, which were made on top of it. */
export function discard (data: PendingData, seq: number): PendingData {
  const target = data.writes.find((write) => write.seq === seq)
  if (target === undefined) return data
  const dropped = new Set<number>([seq])
  for (const write of [...data.writes].sort((a, b) => a.seq - b.seq)) {
    if (write.seq <= seq || write.userId !== target.userId || !unsent(write)) continue
    if (data.writes.some((earlier) => dropped.has(earlier.seq) && sharesKey(earlier, write))) dropped.add(write.seq)
  }
  return { ...data, writes: data.writes.filter((write) => !dropped.has(write.seq)) }
}

/** Drops the given sent writes once the lists holding them have been read again. */
export function forgetSent (data: PendingData, seqs: number[]): PendingData {
  const gone = new Set(seqs)
  return { ...data, writes: data.writes.filter((write) => !(gone.has(write.seq) && write.state === 'sent')) }
}

/**
 * What the grid shows on an event a write has not reached the server with, or null. A delayed
 * write is shown as waiting: it goes by itself, the person need not do anything.
 */
export interface WriteMark {
  seq: number
  state: 'waiting' | 'failed'
  reason: string
  deletion: boolean
}

export function markOf (data: PendingData, userId: string, eventId: string): WriteMark | null {
  const writes = unsentOf(data, userId)
  let mark: WriteMark | null = null
  for (const write of writes) {
    if (!shownOn(write.effect).includes(eventId)) continue
    const blocked = writes.some((earlier) => earlier.seq < write.seq && earlier.state !== 'queued' && sharesKey(earlier, write))
    if (write.state === 'failed' || write.state === 'waiting' || write.state === 'delayed') {
      mark = { seq: write.seq, state: write.state === 'failed' ? 'failed' : 'waiting', reason: write.reason ?? 'Not saved yet.', deletion: write.effect.kind === 'delete' }
      if (write.state === 'failed') return mark
    } else if (blocked && mark === null) {
      mark = { seq: write.seq, state: 'waiting', reason: 'Not saved yet: it waits for an earlier change of this event.', deletion: write.effect.kind === 'delete' }
    }
  }
  return mark
}

/** The counts the status line gives, and when the delayed writes go again. */
export function summaryOf (data: PendingData, userId: string): { queued: number, waiting: number, delayed: number, failed: number, retryAt: number | null } {
  const writes = unsentOf(data, userId)
  return {
    queued: writes.filter((write) => write.state === 'queued').length,
    waiting: writes.filter((write) => write.state === 'waiting').length,
    delayed: writes.filter((write) => write.state === 'delayed').length,
    failed: writes.filter((write) => write.state === 'failed').length,
    retryAt: nextRetryAt(data, userId)
  }
}
