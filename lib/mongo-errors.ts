import {
  MongoNetworkError, MongoNotConnectedError, MongoOperationTimeoutError, MongoServerError, MongoServerSelectionError, MongoTopologyClosedError,
  type MongoClientOptions
} from 'mongodb'

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
 * The backend's deadline for each database operation, cursor and transaction, as a whole
 * (server selection, connection checkout, the round trips and retries included; the driver's
 * `timeoutMS`). A request that needs the database answers, or meets a 503, within about this,
 * whatever state the database is in. Reads and writes of a request take milliseconds when it is
 * well, so this only ever cuts off waiting.
 */
export const OPERATION_DEADLINE_MS = 2500

/** Work done off a person's request in one operation (a page of up to 2,500 provider changes). */
export const BATCH_DEADLINE_MS = 30_000

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
  return error instanceof MongoServerSelectionError ||
    error instanceof MongoOperationTimeoutError ||
    error instanceof MongoNetworkError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoTopologyClosedError
}
