// The specification's "Change feed to message translation", in one place:
//   event          -> eventsChanged
//   calendar       -> calendarsChanged and eventsChanged
//   connection     -> calendarsChanged and eventsChanged, and the connection's new status as
//                     syncStatusChanged, so the client's status flips (specification, States and
//                     transitions): syncing while it imports or catches up, healthy, attention when
//                     it needs the user or is delayed (a revoked grant: attention CONNECTION_REVOKED,
//                     plus the legacy alias GOOGLE_REVOKED)
//   importProgress -> syncStatusChanged (still running) or importCompleted (finished)
//   resyncRequired -> a broad invalidation: refetch all calendars and all events
//   no invalidations -> no messages, so idle pulls never wake a tab.
// One page of one user becomes at most one calendarsChanged and one eventsChanged (the ids of the
// page merged), followed by the status messages in feed order.
import type { ChangesPage, ConnectionInvalidation, ImportProgressInvalidation, Invalidation, Provider } from '../schemas/sync/index.js'
import {
  CONNECTION_REVOKED, LEGACY_CONNECTION_REVOKED, MAX_IDS_PER_MESSAGE,
  type CalendarsChangedMessage, type EventsChangedMessage, type InvalidationReason, type ServerMessage, type SyncStatusChangedMessage
} from '../schemas/server-message.js'

export type FeedPage = Pick<ChangesPage, 'invalidations' | 'resyncRequired'>

/** Ids touched by a page, per list; `all` once a change names no narrower scope or a list overflows. */
class Scope {
  readonly reasons = new Set<InvalidationReason>()
  readonly eventIds = new Set<string>()
  readonly calendarIds = new Set<string>()
  readonly connectionIds = new Set<string>()
  all = false

  get touched (): boolean {
    return this.reasons.size > 0
  }

  add (list: Set<string>, id: string): void {
    list.add(id)
    if (list.size > MAX_IDS_PER_MESSAGE) this.all = true
  }

  lists (): { eventIds?: string[], calendarIds?: string[], connectionIds?: string[] } {
    if (this.all) return {}
    return {
      ...(this.eventIds.size > 0 ? { eventIds: [...this.eventIds] } : {}),
      ...(this.calendarIds.size > 0 ? { calendarIds: [...this.calendarIds] } : {}),
      ...(this.connectionIds.size > 0 ? { connectionIds: [...this.connectionIds] } : {})
    }
  }
}

export function isRevocation (invalidation: ConnectionInvalidation): boolean {
  return invalidation.state === 'actionRequired' && invalidation.reason === 'authorizationRevoked'
}

/** The two messages a revoked grant produces: the current code, then its legacy alias. */
export function revocationMessages (connectionId: string, provider?: Provider): SyncStatusChangedMessage[] {
  const named = provider === undefined ? {} : { provider }
  return [
    { type: 'syncStatusChanged', connectionId, ...named, status: 'attention', code: CONNECTION_REVOKED, retryable: false },
    { type: 'syncStatusChanged', connectionId, ...named, status: 'attention', code: LEGACY_CONNECTION_REVOKED, retryable: false, aliasOf: CONNECTION_REVOKED }
  ]
}

/** A broad invalidation: the client refetches its whole calendar list and every event query. */
export function resyncMessages (): ServerMessage[] {
  return [
    { type: 'calendarsChanged', reasons: ['resync'], refetchAll: true },
    { type: 'eventsChanged', reasons: ['resync'], refetchAll: true }
  ]
}

/** What the client shows for a connection that moved to a new state. */
function connectionStatusMessages (invalidation: ConnectionInvalidation): SyncStatusChangedMessage[] {
  const { connectionId, provider, unsyncedWrites } = invalidation
  if (isRevocation(invalidation)) return revocationMessages(connectionId, provider)
  // Named when the feed knows it, so a tab that did not make the connection labels it right.
  const named = { ...(provider === undefined ? {} : { provider }), ...(unsyncedWrites === undefined ? {} : { unsyncedWrites }) }
  switch (invalidation.state) {
    case 'connecting':
    case 'importing':
    case 'catchingUp':
      return [{ type: 'syncStatusChanged', connectionId, ...named, status: 'syncing' }]
    case 'healthy':
      return [{ type: 'syncStatusChanged', connectionId, ...named, status: 'healthy' }]
    case 'delayed':
      return [{ type: 'syncStatusChanged', connectionId, ...named, status: 'attention', code: 'SYNC_DELAYED', retryable: true }]
    case 'actionRequired':
      return [{ type: 'syncStatusChanged', connectionId, ...named, status: 'attention', code: 'ACTION_REQUIRED', retryable: false }]
    case 'disconnected':
      // The calendar list changes; there is no status left to show.
      return []
  }
}

function importMessage (invalidation: ImportProgressInvalidation): ServerMessage {
  const { connectionId, operation, counts } = invalidation
  if (invalidation.phase === 'completed') return { type: 'importCompleted', connectionId, operation, counts }
  return { type: 'syncStatusChanged', connectionId, status: 'syncing', import: { operation, counts } }
}

function addEvent (events: Scope, invalidation: Extract<Invalidation, { kind: 'event' }>): void {
  events.reasons.add('event')
  // The narrowest id the change names; an event invalidation naming nothing means "any event".
  if (invalidation.eventId !== undefined) events.add(events.eventIds, invalidation.eventId)
  else if (invalidation.calendarId !== undefined) events.add(events.calendarIds, invalidation.calendarId)
  else if (invalidation.connectionId !== undefined) events.add(events.connectionIds, invalidation.connectionId)
  else events.all = true
}

function addCalendar (scope: Scope, invalidation: Extract<Invalidation, { kind: 'calendar' }>): void {
  scope.reasons.add('calendar')
  if (invalidation.calendarId !== undefined) scope.add(scope.calendarIds, invalidation.calendarId)
  else scope.add(scope.connectionIds, invalidation.connectionId)
}

export function translatePage (page: FeedPage): ServerMessage[] {
  if (page.resyncRequired) return resyncMessages()
  if (page.invalidations.length === 0) return []

  const calendars = new Scope()
  const events = new Scope()
  const statuses: ServerMessage[] = []
  const revoked = new Set<string>()
  const invalidations = page.invalidations

  invalidations.forEach((invalidation, index) => {
    switch (invalidation.kind) {
      case 'event':
        addEvent(events, invalidation)
        break
      case 'calendar':
        addCalendar(calendars, invalidation)
        addCalendar(events, invalidation)
        break
      case 'connection':
        for (const scope of [calendars, events]) {
          scope.reasons.add('connection')
          scope.add(scope.connectionIds, invalidation.connectionId)
        }
        {
          // A later move or import report of the same connection in this page supersedes this
          // status, as for import progress; a revocation is always told, once.
          const superseded = invalidations.slice(index + 1)
            .some((later) => (later.kind === 'connection' || later.kind === 'importProgress') && later.connectionId === invalidation.connectionId)
          if (isRevocation(invalidation)) {
            if (!revoked.has(invalidation.connectionId)) {
              revoked.add(invalidation.connectionId)
              statuses.push(...revocationMessages(invalidation.connectionId, invalidation.provider))
            }
          } else if (!superseded) {
            statuses.push(...connectionStatusMessages(invalidation))
          }
        }
        break
      case 'importProgress': {
        // A progress report that a later report of the same connection in this page supersedes
        // would only make the status line flicker.
        const superseded = invalidation.phase === 'progress' && invalidations.slice(index + 1)
          .some((later) => later.kind === 'importProgress' && later.connectionId === invalidation.connectionId)
        if (!superseded) statuses.push(importMessage(invalidation))
        break
      }
    }
  })

  const messages: ServerMessage[] = []
  if (calendars.touched) {
    const message: CalendarsChangedMessage = { type: 'calendarsChanged', reasons: [...calendars.reasons], refetchAll: calendars.all, ...calendars.lists() }
    messages.push(message)
  }
  if (events.touched) {
    const message: EventsChangedMessage = { type: 'eventsChanged', reasons: [...events.reasons], refetchAll: events.all, ...events.lists() }
    messages.push(message)
  }
  messages.push(...statuses)
  return messages
}
