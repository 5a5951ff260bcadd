import {
  MongoNetworkError, MongoNotConnectedError, MongoServerError, MongoServerSelectionError, MongoTopologyClosedError, type MongoClientOptions
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
    error instanceof MongoNetworkError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoTopologyClosedError
}
