import { CountsByKey } from '../lib/counts-by-key.js'
import type { BeginConnectionRequest, CalDavConnectRequest, CalDavConnectResponse, SyncBeginConnectionResponse } from '../schemas/sync/index.js'
import type { CalendarListView } from '../schemas/calendar.js'
import { calendarList } from '../lib/calendars.js'
import { SyncRequestError, SyncUnavailableError, type SyncClient } from '../clients/sync.js'
import { TypedHttpError } from '../lib/error-bodies.js'

export interface ProviderConnections {
  /** Starts a provider authorization in the Sync service; the answer names where the browser goes and the binder it is to hold. */
  begin: (userId: string, request: BeginConnectionRequest) => Promise<SyncBeginConnectionResponse>
  /** Connects a CalDAV account with a server URL, user name and app password (no OAuth). */
  connectCalDav: (userId: string, request: CalDavConnectRequest) => Promise<CalDavConnectResponse>
  /** Asks Sync to pull the user's connected calendars now (the refresh button, focus refresh). */
  refresh: (userId: string) => Promise<{ queued: number }>
  /** The user's provider calendars with their names and colours, as the calendar list shows them. */
  calendars: (userId: string) => Promise<CalendarListView>
}

// Sync's refusals reach the client with Sync's own status and code (503 MAINTENANCE, 409
// EXECUTION_PASSIVE, 404 CONNECTION_NOT_FOUND, ...); an unreachable Sync is a 503 to retry.
async function asked<T> (call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (error) {
    if (error instanceof SyncRequestError) {
      const details = error.connectionId === null ? {} : { connectionId: error.connectionId }
      throw new TypedHttpError(error.statusCode, error.code, error.message, details, error.statusCode === 429 ? CONNECT_RETRY_AFTER_SECONDS : undefined)
    }
    if (error instanceof SyncUnavailableError) throw new TypedHttpError(503, 'SYNC_UNAVAILABLE', 'Calendar sync is briefly unavailable; try again shortly', {}, 5)
    throw error
  }
}

/** A CalDAV connect may wait on a silent server for about this long: a refused one tries again then. */
const CONNECT_RETRY_AFTER_SECONDS = 10
/** CalDAV connects one user may have under way in this process (each holds a socket to Sync and Sync's requests to the server). */
const CALDAV_CONNECTS_UNDER_WAY_PER_USER = 2

/** Connecting and listing provider calendars, asked of Sync on the user's behalf. */
export function createProviderConnections (sync: Pick<SyncClient, 'beginConnection' | 'connectCalDav' | 'restartSync' | 'calendars'>): ProviderConnections {
  const connectsUnderWay = new CountsByKey()
  return {
    begin: async (userId: string, request: BeginConnectionRequest) => await asked(async () => await sync.beginConnection(userId, request)),
    connectCalDav: async (userId: string, request: CalDavConnectRequest) => {
      if (!connectsUnderWay.tryTake(userId, CALDAV_CONNECTS_UNDER_WAY_PER_USER)) {
        throw new TypedHttpError(429, 'RATE_LIMITED', 'Two connects of yours are under way; try again once one has finished', {}, CONNECT_RETRY_AFTER_SECONDS)
      }
      try {
        return await asked(async () => await sync.connectCalDav(userId, request))
      } finally {
        connectsUnderWay.release(userId)
      }
    },
    refresh: async (userId: string) => await asked(async () => await sync.restartSync(userId)),
    calendars: async (userId: string) => calendarList(await asked(async () => await sync.calendars(userId)))
  }
}
