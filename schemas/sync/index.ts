export * from './common.js'
export * from './changes.js'
export * from './event-change.js'
export * from './connections.js'
export * from './errors.js'
export * from './health.js'
export * from './provider-events.js'
export * from './credentials.js'

/** Paths of the Sync service's internal API; the server's routes and the client both use them. */
export const SYNC_PATHS = {
  changes: '/internal/changes',
  changesBatch: '/internal/changes/batch',
  eventChanges: '/internal/event-changes',
  metadata: (userId: string) => `/internal/users/${userId}/metadata`,
  calendars: (userId: string) => `/internal/users/${userId}/calendars`,
  beginConnection: (userId: string) => `/internal/users/${userId}/connections/begin`,
  connectCalDav: (userId: string) => `/internal/users/${userId}/connections/caldav`,
  stopWatches: (userId: string) => `/internal/users/${userId}/watches/stop`,
  restartSync: (userId: string) => `/internal/users/${userId}/sync/restart`,
  credentials: (userId: string) => `/internal/users/${userId}/credentials`
} as const
export * from './public-callbacks.js'
