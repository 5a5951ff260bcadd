// The deadline of each call the stores make to the Sync database. A database that stopped answering
// (its process hung, its sockets open) would otherwise hold a call until the driver's own timeouts
// end it, and a checkout from a pool whose connections all hang has none. Each call runs under
// withDatabaseDeadline (stores/database.ts): past its deadline it rejects with
// DatabaseDeadlineError, which the error handler answers with 503 DATABASE_UNAVAILABLE.
//
// A person's request is answered within DATABASE_CALL_DEADLINE_MS per call, as in the backend.
// Background work (job handlers, the job queue's bookkeeping, the self-heal sweep, the maintenance
// timer) runs inside `inBackground`, whose calls have BACKGROUND_DATABASE_CALL_DEADLINE_MS: a job
// may wait longer than a person would, and still never waits forever. The stores are shared by both
// (an event-change report and a provider-write job both queue jobs and append to the feed), so the
// deadline comes from the work the call belongs to, not from the store.
import { AsyncLocalStorage } from 'node:async_hooks'
import type { ClientSession } from 'mongodb'
import { requestDatabaseDeadlineMs, withDatabaseDeadline } from '../../stores/database.js'

/**
 * One call of background work: a job handler's store calls, a claim, a lease renewal, the sweep.
 * Longer than any call of a database that answers takes, shorter than a third of a job's lease
 * (DEFAULT_LEASE_MS / 3, when the lease is renewed), so a hung call never costs a job its lease.
 */
export const BACKGROUND_DATABASE_CALL_DEADLINE_MS = 30_000

const deadlines = new AsyncLocalStorage<number>()

/** Runs `work` as background work: its database calls have BACKGROUND_DATABASE_CALL_DEADLINE_MS each. */
export async function inBackground<T> (work: () => Promise<T>): Promise<T> {
  return await deadlines.run(BACKGROUND_DATABASE_CALL_DEADLINE_MS, work)
}

/** The deadline of a database call made now: the background one inside `inBackground`, else a request's. */
export function databaseCallDeadlineMs (): number {
  return deadlines.getStore() ?? requestDatabaseDeadlineMs()
}

/** One call to the database with the deadline of the work it belongs to; reads hand `signal` to the driver. */
export async function databaseCall<T> (work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  return await withDatabaseDeadline(work, databaseCallDeadlineMs())
}

/**
 * Where a store's writes go: into the caller's transaction when `session` is given
 * (SyncDatabase.withTransaction on a deployment that has transactions), else each at once.
 */
export interface InTransaction {
  session?: ClientSession | undefined
}
