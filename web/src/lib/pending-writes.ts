// Writes to the account that the server has not taken yet, kept in browser storage so that none is
// lost to a dropped connection, a refusal or a reload. Each is sent as the requests it was made
// with, ids included: the events API is idempotent on a client-chosen id (POST with an existing id
// replaces, PUT replaces, a DELETE of what is gone is done), so a request sent twice, by a retry
// or by a second tab, stores the event once. Writes go in the order they were made; a write waits
// behind an earlier unsent one to the same event or series.
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
 * returns; failed: the server refused, the person retries or discards; sent: the server has it,
 * kept until the lists are read again so the grid does not flicker back.
 */
export type WriteState = 'queued' | 'waiting' | 'failed' | 'sent'

export interface PendingWrite {
  seq: number
  userId: string
  effect: Effect
  steps: WriteStep[]
  /** Steps the server has answered (a retry goes on from there). */
  done: number
  state: WriteState
  /** Why it is not saved, in a sentence, for waiting and failed writes. */
  reason?: string
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

/** The requests of a change, in order (the events API's routes, see README "Events"). */
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
  const write: PendingWrite = { seq: data.nextSeq, userId, effect, steps: stepsOf(effect), done: 0, state: 'queued' }
  return { ...data, nextSeq: data.nextSeq + 1, writes: [...data.writes, write] }
}

/** The events and series a write touches: two writes sharing one must go in order. */
export function keysOf (write: PendingWrite): string[] {
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

/** The next write to send: the oldest queued one with no earlier unsent write to the same event. */
export function nextToSend (data: PendingData, userId: string): PendingWrite | null {
  const writes = unsentOf(data, userId)
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
    const { reason: _reason, ...rest } = write
    return done >= write.steps.length ? { ...rest, done, state: 'sent' } : { ...rest, done, state: 'queued' }
  })
}

/** What a failed request means for its write. */
export type Failure =
  | { kind: 'network' }
  | { kind: 'status', status: number, code?: string, message: string }

export type Outcome = { state: 'done' } | { state: 'waiting' | 'failed', reason: string }

export function outcomeOf (step: WriteStep, failure: Failure): Outcome {
  if (failure.kind === 'network') return { state: 'waiting', reason: 'Not saved yet: no connection. It is sent when the connection returns.' }
  const { status, code, message } = failure
  // Gone already: what the deletion wanted (a retry after an answer that never arrived, or another tab).
  if (step.method === 'DELETE' && status === 404) return { state: 'done' }
  if (status === 401) return { state: 'waiting', reason: 'Not saved yet: sign in again to send it.' }
  if (code === 'CONNECTION_REVOKED' || status === 410) return { state: 'failed', reason: 'Not saved: the calendar connection was revoked. Reconnect it, then retry.' }
  if (code === 'MAINTENANCE') return { state: 'failed', reason: 'Not saved: provider calendars are in maintenance. Retry later.' }
  if (status === 429) return { state: 'failed', reason: 'Not saved: too many changes at once (429). Retry in a moment.' }
  if (status >= 500) return { state: 'failed', reason: `Not saved: the server could not take it (${status}). Retry in a moment.` }
  return { state: 'failed', reason: `Not saved: ${message}` }
}

export function stepFailed (data: PendingData, seq: number, outcome: Exclude<Outcome, { state: 'done' }>): PendingData {
  return update(data, seq, (write) => ({ ...write, state: outcome.state, reason: outcome.reason }))
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
  const { reason: _reason, ...rest } = write
  return { ...rest, state: 'queued' }
}

export function retry (data: PendingData, seq: number): PendingData {
  return update(data, seq, (write) => unsent(write) ? requeued(write) : write)
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

/** What the grid shows on an event a write has not reached the server with, or null. */
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
    if (write.state === 'failed' || write.state === 'waiting') {
      mark = { seq: write.seq, state: write.state, reason: write.reason ?? 'Not saved yet.', deletion: write.effect.kind === 'delete' }
      if (write.state === 'failed') return mark
    } else if (blocked && mark === null) {
      mark = { seq: write.seq, state: 'waiting', reason: 'Not saved yet: it waits for an earlier change of this event.', deletion: write.effect.kind === 'delete' }
    }
  }
  return mark
}

/** The counts the status line gives. */
export function summaryOf (data: PendingData, userId: string): { queued: number, waiting: number, failed: number } {
  const writes = unsentOf(data, userId)
  return {
    queued: writes.filter((write) => write.state === 'queued').length,
    waiting: writes.filter((write) => write.state === 'waiting').length,
    failed: writes.filter((write) => write.state === 'failed').length
  }
}
