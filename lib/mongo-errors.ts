import {
  MongoNetworkError, MongoNotConnectedError, MongoOperationTimeoutError, MongoServerError, MongoServerSelectionError, MongoTopologyClosedError
} from 'mongodb'

export function isDuplicateKeyError (error: unknown): boolean {
  return error instanceof MongoServerError && error.code === 11000
}

/** The server refused the operation for lack of privileges (code 13, Unauthorized). */
export function isUnauthorizedError (error: unknown): boolean {
  return error instanceof MongoServerError && error.code === 13
}

/**
 * The database could not be reached or did not answer in time: no server to select, a broken or
 * silent connection, the operation's deadline passed. Worth a retry later, unlike a refusal.
 */
export function isDatabaseUnavailableError (error: unknown): boolean {
  return error instanceof MongoServerSelectionError ||
    error instanceof MongoNetworkError ||
    error instanceof MongoOperationTimeoutError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoTopologyClosedError
}
