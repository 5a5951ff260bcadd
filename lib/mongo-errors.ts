import { MongoServerError } from 'mongodb'

export function isDuplicateKeyError (error: unknown): boolean {
  return error instanceof MongoServerError && error.code === 11000
}

/** The server refused the operation for lack of privileges (code 13, Unauthorized). */
export function isUnauthorizedError (error: unknown): boolean {
  return error instanceof MongoServerError && error.code === 13
}
