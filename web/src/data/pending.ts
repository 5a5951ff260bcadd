// The account's writes on their way to the server (lib/pending-writes.ts has the rules): kept in
// local storage, sent in order by one tab at a time, sent again when the connection or the session
// returns or when the wait a 429 named is over, and shown on their events until the server has them.
import { api, ApiError } from './api.js'
import { session } from './session.js'
import { createStore } from './store.js'
import { applyToCache, invalidateEvents, queryClient } from './query.js'
import { browserStore } from './browser-store.js'
import {
  discard, enqueue, forgetSent, loadPending, nextRetryAt, nextToSend, outcomeOf, PENDING_WRITES_KEY, resumeDelayed, resumeWaiting, retry,
  savePending, stepDone, stepFailed, waitForConnection, waitForServer, type Failure, type Outcome, type PendingData
} from '../lib/pending-writes.js'
import type { Effect } from '../lib/optimistic.js'

const store = browserStore()

/** This browser's unsent writes, every account's (each view filters by its user). */
export const pendingWrites = createStore<PendingData>(loadPending(store))
/** Whether the browser says it is online (it can be wrong one way: online with the server down). */
export const online = createStore<boolean>(typeof navigator === 'undefined' ? true : navigator.onLine)

function change (apply: (data: PendingData) => PendingData): void {
  // Always from storage: another tab may have sent or added writes since this one last looked.
  const next = apply(loadPending(store))
  savePending(store, next)
  pendingWrites.set(next)
}

function currentUser (): string | null {
  const state = session.get()
  return state.status === 'signedIn' ? state.userId : null
}

function failureOf (error: unknown): Failure {
  if (error instanceof ApiError) return { kind: 'status', status: error.status, ...(error.code === undefined ? {} : { code: error.code }), message: error.message, retryAfter: error.retryAfter }
  // fetch rejects only when no answer came: no connection, or the server is not there.
  return { kind: 'network' }
}

async function sendAll (userId: string): Promise<void> {
  let sent = false
  for (;;) {
    const write = nextToSend(loadPending(store), userId)
    if (write === null) break
    const step = write.steps[write.done]
    let outcome: Outcome = { state: 'done' }
    if (step !== undefined) {
      try {
        await api(step.path, { method: step.method, ...(step.body === undefined ? {} : { body: step.body }), ...(step.query === undefined ? {} : { query: step.query }) })
      } catch (error) {
        outcome = outcomeOf(step, failureOf(error), Date.now(), write.delays ?? 0)
      }
    }
    if (outcome.state === 'delayed') {
      // The server named a wait (429): this write and the ones queued behind it go again after it.
      const delayed = outcome
      change((data) => waitForServer(stepFailed(data, write.seq, delayed), userId, delayed.retryAt))
      break
    }
    if (outcome.state === 'waiting') {
      const waiting = outcome
      change((data) => waitForConnection(stepFailed(data, write.seq, waiting), userId, waiting.reason))
      break
    }
    if (outcome.state === 'failed') {
      const failed = outcome
      change((data) => stepFailed(data, write.seq, failed))
      continue
    }
    const finished = write.done + 1 >= write.steps.length
    if (finished) {
      // The server has it: the cached lists take the change (so the grid does not flicker back
      // before the next read) and the write leaves the queue.
      await queryClient.cancelQueries({ queryKey: ['events', 'account'] })
      applyToCache('account', write.effect)
      sent = true
    }
    change((data) => {
      const next = stepDone(data, write.seq)
      return finished ? forgetSent(next, [write.seq]) : next
    })
  }
  if (sent) await invalidateEvents()
}

let flushing: Promise<void> | null = null
let again = false

/**
 * Sends what is queued. One tab at a time (a Web Lock, where the browser has them): two tabs
 * sending the same queue could put an older change of an event after a newer one.
 */
async function flushWrites (): Promise<void> {
  if (flushing !== null) {
    again = true
    return await flushing
  }
  flushing = (async () => {
    do {
      again = false
      const userId = currentUser()
      if (userId === null) return
      const locks = typeof navigator === 'undefined' ? undefined : navigator.locks
      if (locks === undefined) await sendAll(userId)
      else await locks.request('calendar-pending-writes', async () => { await sendAll(userId) })
    } while (again)
  })().finally(() => { flushing = null })
  return await flushing
}

/** The browser would not keep the write (its storage full, or refused): it was not made. */
export class WriteNotKeptError extends Error {
  constructor (cause: unknown) {
    const full = cause instanceof DOMException && cause.name === 'QuotaExceededError'
    super(full ? 'this browser\'s storage is full' : cause instanceof Error ? cause.message : String(cause))
    this.name = 'WriteNotKeptError'
  }
}

/** An account write: kept first, then sent. Resolves once this tab has tried to send it. */
export async function submitWrite (effect: Effect): Promise<void> {
  const userId = currentUser()
  if (userId === null) throw new Error('Not signed in')
  try {
    change((data) => enqueue(data, userId, effect))
  } catch (error) {
    throw new WriteNotKeptError(error)
  }
  await flushWrites()
}

export function retryWrite (seq: number): void {
  change((data) => retry(data, seq))
  flushWrites().catch(() => {})
}

export async function discardWrite (seq: number): Promise<void> {
  change((data) => discard(data, seq))
  await invalidateEvents()
}

function resume (): void {
  const userId = currentUser()
  if (userId === null) return
  change((data) => resumeWaiting(data, userId))
  flushWrites().catch(() => {})
}

let retryTimer: ReturnType<typeof setTimeout> | undefined

/** One timer for the end of the signed-in user's wait (429), whichever tab or load set it. */
function scheduleRetry (): void {
  clearTimeout(retryTimer)
  const userId = currentUser()
  const at = userId === null ? null : nextRetryAt(pendingWrites.get(), userId)
  if (userId === null || at === null) return
  retryTimer = setTimeout(() => {
    change((data) => resumeDelayed(data, userId, Date.now()))
    // A timer that fired a moment early resumed nothing: it is set again for what is left.
    scheduleRetry()
    flushWrites().catch(() => {})
  }, Math.max(0, at - Date.now()))
}

/** Online/offline, other tabs' changes to the queue, and a session coming back: wired once at start. */
export function wirePendingWrites (): void {
  pendingWrites.subscribe(scheduleRetry)
  window.addEventListener('online', () => {
    online.set(true)
    resume()
  })
  window.addEventListener('offline', () => { online.set(false) })
  window.addEventListener('storage', (event) => {
    if (event.key === PENDING_WRITES_KEY || event.key === null) pendingWrites.set(loadPending(store))
  })
  session.subscribe((state) => {
    if (state.status === 'signedIn') resume()
    scheduleRetry()
  })
  // Writes kept from an earlier visit go as soon as this one has a session (see the subscription).
  if (session.get().status === 'signedIn') resume()
  scheduleRetry()
}
