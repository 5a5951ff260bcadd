// Connecting a CalDAV account: one request, no redirect. The Sync service checks the account at
// the server before anything is stored, so a refusal comes back at once and the import follows an
// acceptance; the stream then reports its progress like any other connection's.
import { api, ApiError } from './api.js'
import { expectConnection, syncView } from './sync.js'
import { withConnected } from '../lib/stream-reactions.js'
import { calDavFailure, recallAccount, rememberAccount, type CalDavAccount, type CalDavFailure } from '../lib/caldav.js'
import { memoryStore, type KeyValueStore } from '../lib/storage.js'
import type { CalDavConnectResponse } from '../../../schemas/sync/index.js'

export type CalDavResult = ({ ok: true } & CalDavConnectResponse) | ({ ok: false } & CalDavFailure)

function accountsStore (): KeyValueStore {
  try {
    return window.localStorage
  } catch {
    return memoryStore()
  }
}

const store = accountsStore()

/** The server and user name last accepted for this connection on this browser, if any. */
export function knownAccount (connectionId: string): CalDavAccount | null {
  return recallAccount(store, connectionId)
}

export async function connectCalDav (input: CalDavAccount & { password: string, connectionId: string | null }): Promise<CalDavResult> {
  const { serverUrl, username, password, connectionId } = input
  expectConnection('caldav')
  try {
    const answer = await api<CalDavConnectResponse>('/connections/caldav', {
      method: 'POST',
      body: { serverUrl, username, password, ...(connectionId === null ? {} : { connectionId }) }
    })
    syncView.set((view) => withConnected(view, answer.connectionId, 'caldav'))
    try {
      rememberAccount(store, answer.connectionId, { serverUrl, username })
    } catch {
      // A full or refused storage only costs the prefill of a later password prompt.
    }
    return { ok: true, ...answer }
  } catch (error) {
    return { ok: false, ...(error instanceof ApiError ? calDavFailure(error.status, error.code) : calDavFailure(0, undefined)) }
  } finally {
    expectConnection(null)
  }
}
