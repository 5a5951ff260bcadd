import {
  MongoNetworkError, MongoNotConnectedError, MongoServerError, MongoServerSelectionError, MongoTopologyClosedError, type ClientSession, type Collection, type Db, type Document, type MongoClient, type MongoClientOptions, type OptionalUnlessRequiredId
} from 'mongodb'
import { withDeadline } from '../lib/deadline.js'

/**
 * Deadlines of every database client of the service. A database that stopped answering (its
 * process hung, its sockets open: the kernel still accepts connections) would otherwise hold a
 * request for as long as the operating system keeps the connection, and the driver's defaults
 * wait 30 s per connection it opens. With these, a request meets an error it can answer (503)
 * within seconds, and nothing waits on a socket without an end.
 */
export const DATABASE_DEADLINES = {
  /** Finding a server to use. */
  serverSelectionTimeoutMS: 3000,
  /** Opening a connection, handshake included. */
  connectTimeoutMS: 2000,
  /** Silence on an open connection; no operation of the service runs longer than this. */
  socketTimeoutMS: 10_000
} as const satisfies MongoClientOptions

/**
 * How long one call to the database on a person's request may take: a lookup, a write, a
 * transaction, the reading of a cursor. The connection deadlines above add up to 5-15 s when the
 * database hangs (and the driver's `timeoutMS` has no effect in mongodb 7.8), so each call has
 * this deadline of its own; past it the request answers 503 with Retry-After. Calls take
 * milliseconds when the database is well.
 */
export const DATABASE_CALL_DEADLINE_MS = 2500

let requestDeadlineMs = DATABASE_CALL_DEADLINE_MS

/** The deadline of a call on a person's request in this process: DATABASE_CALL_DEADLINE_MS unless set otherwise. */
export function requestDatabaseDeadlineMs (): number {
  return requestDeadlineMs
}

/**
 * Sets the deadline of a call on a person's request for the whole process. The services never
 * call it: only the test suite, whose processes share two cores four files at a time, so that a
 * process kept waiting for a core does not answer 503 (test/helper.ts); the tests of the deadline
 * itself set DATABASE_CALL_DEADLINE_MS again.
 */
export function setRequestDatabaseDeadline (ms: number): void {
  requestDeadlineMs = ms
}

/** A page of provider changes (up to 2,500 events in one bulk write), applied for the Sync service, not a person. */
export const PROVIDER_PAGE_DEADLINE_MS = 30_000

/** A call to the database that did not end within its deadline (withDatabaseDeadline). */
export class DatabaseDeadlineError extends Error {
  override name = 'DatabaseDeadlineError'
  constructor (readonly deadlineMs: number) {
    super(`the database did not answer within ${deadlineMs} ms`)
  }
}

/**
 * Runs one call to the database with a deadline: `work` gets a signal to hand to the driver
 * (`signal` of reads and cursors, which the driver then abandons), and the call rejects with
 * DatabaseDeadlineError once `ms` have passed, whether or not the driver took the signal (writes
 * do not). A write abandoned this way may still land later; it was never acknowledged.
 */
export async function withDatabaseDeadline<T> (work: (signal: AbortSignal) => Promise<T>, ms = requestDatabaseDeadlineMs()): Promise<T> {
  const controller = new AbortController()
  return await withDeadline(work(controller.signal), ms, () => {
    const error = new DatabaseDeadlineError(ms)
    controller.abort(error)
    return error
  })
}

export function isDuplicateKeyError (error: unknown): boolean {
  return error instanceof MongoServerError && error.code === 11000
}

/** The server refused the operation for lack of privileges (code 13, Unauthorized). */
export function isUnauthorizedError (error: unknown): boolean {
  return error instanceof MongoServerError && error.code === 13
}

/**
 * The database could not be reached or did not answer in time: no server to select, a broken or
 * silent connection. Worth a retry later, unlike a refusal.
 */
export function isDatabaseUnavailableError (error: unknown): boolean {
  return error instanceof DatabaseDeadlineError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoNetworkError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoTopologyClosedError
}

/**
 * Inserts a document whose id stands for something done once (a vendor event applied, a webhook
 * received): true when this call inserted it, false when it was already there.
 */
export async function insertOnce<T extends Document> (collection: Collection<T>, document: OptionalUnlessRequiredId<T>): Promise<boolean> {
  try {
    await collection.insertOne(document)
    return true
  } catch (error) {
    if (isDuplicateKeyError(error)) return false
    throw error
  }
}

/** The database as the backend's stores use it (plugins/external/mongo.ts connects it). */
export interface MongoHandle {
  client: MongoClient
  db: Db
  /** Whether the deployment runs transactions (a replica set or a sharded cluster; a single server has none). */
  transactional: boolean
  /**
   * Runs `work` in one transaction where the deployment has them, so its writes happen together
   * or not at all; otherwise runs it as is (`session` undefined) and its writes go in order. The
   * whole has the database deadline (a request's, requestDatabaseDeadlineMs, unless `deadlineMs`): past it the
   * caller meets DatabaseDeadlineError, and `signal` is aborted so that `work` stops before its
   * next write (the transaction is then not committed).
   */
  withTransaction: <T>(work: (session: ClientSession | undefined, signal: AbortSignal) => Promise<T>, deadlineMs?: number) => Promise<T>
  /**
   * Whether the database answers a ping within `deadlineMs`. The answer comes by the deadline
   * whatever state the driver is in; while one ping is outstanding, callers share it, so a silent
   * database does not collect a ping per probe.
   */
  ping: (deadlineMs: number) => Promise<boolean>
}
