// Small helpers for asserting what the driver throws.
import { MongoServerError } from 'mongodb'

/** The MongoServerError a promise rejects with; fails loudly if it resolves or throws anything else. */
export async function serverError (promise: Promise<unknown>): Promise<MongoServerError> {
  try {
    await promise
  } catch (error) {
    if (error instanceof MongoServerError) return error
    throw error
  }
  throw new Error('expected the operation to fail with a MongoServerError, but it succeeded')
}
