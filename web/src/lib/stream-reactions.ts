// What the client does with each stream message (specification, "Client reactions", "Revocation
// messages"): eventsChanged refetches the matching event queries; syncStatusChanged,
// importCompleted and userMetadataChanged update the sync/import status and the user metadata.
// A pure reducer: the state in, the new state and the queries to refetch out.
import type { ServerMessage, SyncStatusChangedMessage } from '../../../schemas/server-message.js'
import type { ClientConnectionStatus } from './focus-refresh.js'

const CONNECTION_REVOKED = 'CONNECTION_REVOKED'
/** The legacy alias of CONNECTION_REVOKED, sent for one release: the same condition. */
const LEGACY_CONNECTION_REVOKED = 'GOOGLE_REVOKED'

interface ImportProgress {
  operation: string
  calendarsDone: number
  calendarsTotal: number
  eventsImported: number
}

export interface ConnectionView {
  connectionId: string
  provider: string
  status: ClientConnectionStatus
  /** The attention code, when status is ATTENTION or RECONNECT_REQUIRED. */
  code?: string
  revoked: boolean
  importProgress?: ImportProgress
  lastImport?: { operation: string, eventsImported: number }
  /** Events whose change made here this connection's provider does not have (refused, or failing). */
  unsyncedWrites?: number
}

export interface SyncView {
  connections: Record<string, ConnectionView>
  /** The session library's user metadata (sync flags such as RESTART). */
  metadata: Record<string, unknown> | null
}

export const EMPTY_SYNC_VIEW: SyncView = { connections: {}, metadata: null }

export type Refetch = { all: true } | { all: false, eventIds: string[] } | null

export interface Reaction {
  sync: SyncView
  refetch: Refetch
  /** The calendar list is read again (a calendar added, removed or renamed at a provider). */
  calendars?: true
}

function isRevokedCode (code: string | undefined): boolean {
  return code === CONNECTION_REVOKED || code === LEGACY_CONNECTION_REVOKED
}

interface SummaryLike {
  connectionId: string
  provider: string
  state: string
  reason: string | null
  importProgress?: { phase: string, operation: string, counts: { calendarsDone: number, calendarsTotal: number, eventsImported: number } } | null
  unsyncedWrites?: number
}

/** The client status of a connection as the Sync service summarises it in the metadata. */
function statusFromSummary (summary: SummaryLike): ConnectionView {
  const revoked = summary.reason === 'authorizationRevoked'
  const view: ConnectionView = { connectionId: summary.connectionId, provider: summary.provider, status: 'HEALTHY', revoked }
  switch (summary.state) {
    case 'healthy': view.status = 'HEALTHY'; break
    case 'delayed': view.status = 'ATTENTION'; view.code = 'DELAYED'; break
    case 'actionRequired':
      view.status = revoked ? 'RECONNECT_REQUIRED' : 'ATTENTION'
      view.code = revoked ? CONNECTION_REVOKED : 'ACTION_REQUIRED'
      break
    case 'importing': view.status = 'IMPORTING'; break
    case 'connecting':
    case 'catchingUp': view.status = 'SYNCING'; break
    default: view.status = 'DISCONNECTED'
  }
  if (summary.unsyncedWrites !== undefined && summary.unsyncedWrites > 0) view.unsyncedWrites = summary.unsyncedWrites
  const progress = summary.importProgress
  if (progress != null && progress.phase === 'progress') {
    view.importProgress = { operation: progress.operation, ...progress.counts }
  }
  return view
}

function applySyncStatus (sync: SyncView, message: SyncStatusChangedMessage, unknownProvider: string): SyncView {
  const previous = sync.connections[message.connectionId]
  const base: ConnectionView = previous ?? { connectionId: message.connectionId, provider: message.provider ?? unknownProvider, status: 'HEALTHY', revoked: false }
  let next: ConnectionView
  if (message.status === 'attention') {
    const revoked = isRevokedCode(message.code) || message.aliasOf === CONNECTION_REVOKED
    // The alias repeats a condition already applied; applying it again changes nothing.
    next = {
      ...base,
      status: revoked || !message.retryable ? 'RECONNECT_REQUIRED' : 'ATTENTION',
      code: revoked ? CONNECTION_REVOKED : message.code,
      revoked: base.revoked || revoked
    }
    delete next.importProgress
  } else if (message.status === 'syncing') {
    next = { ...base, status: message.import !== undefined && message.import.operation === 'full' ? 'IMPORTING' : 'SYNCING', revoked: false }
    delete next.code
    if (message.import !== undefined) next.importProgress = { operation: message.import.operation, ...message.import.counts }
  } else {
    next = { ...base, status: 'HEALTHY', revoked: false }
    delete next.code
    delete next.importProgress
  }
  if (message.provider !== undefined) next.provider = message.provider
  // A message that does not count the unwritten changes leaves the count as it was.
  if (message.unsyncedWrites !== undefined) next.unsyncedWrites = message.unsyncedWrites
  return { ...sync, connections: { ...sync.connections, [message.connectionId]: next } }
}

/**
 * `unknownProvider`: the provider of a connection first seen here through a message that names
 * none. Google's connect and reconnect come back through a page load, whose replay names it; a
 * CalDAV connect in flight in this tab says 'caldav' until its answer names the connection.
 */
export function reactTo (sync: SyncView, message: ServerMessage, unknownProvider = 'google'): Reaction {
  switch (message.type) {
    case 'eventsChanged':
      return { sync, refetch: message.refetchAll || message.eventIds === undefined ? { all: true } : { all: false, eventIds: message.eventIds } }
    case 'calendarsChanged':
      // The eventsChanged that accompanies it refetches the events.
      return { sync, refetch: null, calendars: true }
    case 'syncStatusChanged':
      return { sync: applySyncStatus(sync, message, unknownProvider), refetch: null }
    case 'importCompleted': {
      const previous = sync.connections[message.connectionId]
      const base: ConnectionView = previous ?? { connectionId: message.connectionId, provider: unknownProvider, status: 'HEALTHY', revoked: false }
      const next: ConnectionView = { ...base, status: 'HEALTHY', revoked: false, lastImport: { operation: message.operation, eventsImported: message.counts.eventsImported } }
      delete next.importProgress
      delete next.code
      return { sync: { ...sync, connections: { ...sync.connections, [message.connectionId]: next } }, refetch: { all: true } }
    }
    case 'userMetadataChanged': {
      const connections: Record<string, ConnectionView> = {}
      if (message.sync !== null) {
        for (const summary of message.sync.connections) connections[summary.connectionId] = statusFromSummary(summary)
      }
      // Sync could not be read at this moment: keep what is known rather than show nothing.
      return {
        sync: { connections: message.sync === null ? sync.connections : connections, metadata: message.session.metadata ?? sync.metadata },
        refetch: null
      }
    }
  }
}

/**
 * A connection this tab just made or repaired without a redirect (CalDAV). Its status messages
 * name no provider, so the provider is recorded here; the account was just accepted, so a state
 * from before (revoked, attention) gives way to syncing, while one the stream already sent since
 * (syncing, healthy) stays.
 */
export function withConnected (sync: SyncView, connectionId: string, provider: string): SyncView {
  const previous = sync.connections[connectionId]
  const stale = previous === undefined || previous.status === 'RECONNECT_REQUIRED' || previous.status === 'ATTENTION' || previous.status === 'DISCONNECTED'
  const next: ConnectionView = stale
    ? { connectionId, provider, status: 'SYNCING', revoked: false }
    : { ...previous, provider }
  return { ...sync, connections: { ...sync.connections, [connectionId]: next } }
}

/** Changes made here that a provider does not have, over every connection; null when there are none. */
export function unsyncedWritesOf (sync: SyncView): { count: number, providers: string[] } | null {
  const holding = Object.values(sync.connections).filter((connection) => connection.status !== 'DISCONNECTED' && (connection.unsyncedWrites ?? 0) > 0)
  if (holding.length === 0) return null
  return {
    count: holding.reduce((sum, connection) => sum + (connection.unsyncedWrites ?? 0), 0),
    providers: [...new Set(holding.map((connection) => connection.provider))]
  }
}

/** The account's connections still connected. */
export function liveConnections (sync: SyncView): ConnectionView[] {
  return Object.values(sync.connections).filter((connection) => connection.status !== 'DISCONNECTED')
}

/** The connection the status indicator, the reconnect banner and focus refresh speak of. */
export function primaryConnection (sync: SyncView): ConnectionView | null {
  const all = liveConnections(sync)
  const order: ClientConnectionStatus[] = ['RECONNECT_REQUIRED', 'ATTENTION', 'IMPORTING', 'SYNCING', 'HEALTHY']
  all.sort((a, b) => order.indexOf(a.status) - order.indexOf(b.status))
  return all[0] ?? null
}

/**
 * Which cached event queries a refetch touches: every one for `all`, otherwise those holding one
 * of the ids (an occurrence `<seriesId>_<key>` belongs to its series). An id no cached query
 * holds may be a new event anywhere, so then every query is touched too.
 */
export function queriesToRefetch<K> (refetch: Refetch, cached: Array<{ key: K, eventIds: string[] }>): K[] {
  if (refetch === null) return []
  if (refetch.all) return cached.map((query) => query.key)
  const wanted = new Set(refetch.eventIds)
  const seen = new Set<string>()
  const touched: K[] = []
  for (const query of cached) {
    let hit = false
    for (const id of query.eventIds) {
      const owner = id.includes('_') ? id.slice(0, id.indexOf('_')) : id
      if (wanted.has(id) || wanted.has(owner)) {
        hit = true
        seen.add(wanted.has(id) ? id : owner)
      }
    }
    if (hit) touched.push(query.key)
  }
  if ([...wanted].some((id) => !seen.has(id))) return cached.map((query) => query.key)
  return touched
}
