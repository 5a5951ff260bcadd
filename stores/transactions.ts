import type { ClientSession, Db, MongoClient } from 'mongodb'
import { withDatabaseDeadline } from './database.js'

/** Whether the deployment runs transactions: a replica set or a sharded cluster. */
export async function hasTransactions (db: Db): Promise<boolean> {
  const hello = await db.admin().command({ hello: 1 })
  return typeof hello['setName'] === 'string' || hello['msg'] === 'isdbgrid'
}

export type TransactionRunner = <T>(work: (session: ClientSession | undefined, signal: AbortSignal) => Promise<T>, deadlineMs: number) => Promise<T>

/**
 * Runs `work` in one transaction with a deadline, or (a standalone server) without one, its
 * session then undefined. Past the deadline the caller has been answered (503): the driver's retry
 * after a transient error does not run again, and what the work wrote is not committed.
 */
export function transactionRunner (client: MongoClient, transactional: boolean): TransactionRunner {
  return async (work, deadlineMs) => await withDatabaseDeadline(async (signal) => {
    if (!transactional) return await work(undefined, signal)
    const session = client.startSession()
    try {
      return await session.withTransaction(async () => {
        signal.throwIfAborted()
        const result = await work(session, signal)
        signal.throwIfAborted()
        return result
      })
    } finally {
      await session.endSession()
    }
  }, deadlineMs)
}
