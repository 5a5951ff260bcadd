import { test } from 'tap'
import type { Invalidation } from '../../schemas/sync/index.js'
import { MAX_IDS_PER_MESSAGE, serverMessageCheck, type ServerMessage } from '../../schemas/server-message.js'
import { translatePage } from '../../lib/change-translation.js'

const at = '2026-11-21T09:00:00.000Z'
const conn1 = '64b7f0c2a1b2c3d4e5f6c001'
const conn2 = '64b7f0c2a1b2c3d4e5f6c002'
const counts = { calendarsDone: 1, calendarsTotal: 3, eventsImported: 40 }

function translate (invalidations: Invalidation[], resyncRequired = false): ServerMessage[] {
  const messages = translatePage({ invalidations, resyncRequired })
  for (const message of messages) {
    if (!serverMessageCheck.Check(message)) throw new Error(`invalid message ${JSON.stringify(message)}`)
  }
  return messages
}

test('no invalidations produce no messages', async (t) => {
  t.same(translate([]), [])
})

test('an event invalidation becomes eventsChanged only', async (t) => {
  t.same(translate([{ kind: 'event', at, eventId: 'e1' }]), [
    { type: 'eventsChanged', reasons: ['event'], refetchAll: false, eventIds: ['e1'] }
  ])
  t.same(translate([{ kind: 'event', at, calendarId: 'cal-1', connectionId: conn1 }]), [
    { type: 'eventsChanged', reasons: ['event'], refetchAll: false, calendarIds: ['cal-1'] }
  ], 'without an event id the calendar is the scope')
  t.same(translate([{ kind: 'event', at }]), [
    { type: 'eventsChanged', reasons: ['event'], refetchAll: true }
  ], 'naming nothing means every event')
})

test('a calendar invalidation becomes calendarsChanged and eventsChanged', async (t) => {
  t.same(translate([{ kind: 'calendar', at, connectionId: conn1, calendarId: 'cal-1' }]), [
    { type: 'calendarsChanged', reasons: ['calendar'], refetchAll: false, calendarIds: ['cal-1'] },
    { type: 'eventsChanged', reasons: ['calendar'], refetchAll: false, calendarIds: ['cal-1'] }
  ])
  t.same(translate([{ kind: 'calendar', at, connectionId: conn1 }]), [
    { type: 'calendarsChanged', reasons: ['calendar'], refetchAll: false, connectionIds: [conn1] },
    { type: 'eventsChanged', reasons: ['calendar'], refetchAll: false, connectionIds: [conn1] }
  ], 'the calendar list of a whole connection')
})

test('a connection invalidation becomes calendarsChanged, eventsChanged and the connection\'s new status', async (t) => {
  t.same(translate([{ kind: 'connection', at, connectionId: conn1, state: 'healthy', reason: null }]), [
    { type: 'calendarsChanged', reasons: ['connection'], refetchAll: false, connectionIds: [conn1] },
    { type: 'eventsChanged', reasons: ['connection'], refetchAll: false, connectionIds: [conn1] },
    { type: 'syncStatusChanged', connectionId: conn1, status: 'healthy' }
  ])
  const statusOf = (state: 'connecting' | 'importing' | 'catchingUp' | 'healthy' | 'delayed' | 'actionRequired' | 'disconnected', reason: 'readFailure' | null = null) =>
    translate([{ kind: 'connection', at, connectionId: conn1, state, reason }]).filter((message) => message.type === 'syncStatusChanged')
  for (const state of ['connecting', 'importing', 'catchingUp'] as const) {
    t.same(statusOf(state), [{ type: 'syncStatusChanged', connectionId: conn1, status: 'syncing' }], `${state}: syncing`)
  }
  t.same(statusOf('delayed'), [{ type: 'syncStatusChanged', connectionId: conn1, status: 'attention', code: 'SYNC_DELAYED', retryable: true }])
  t.same(statusOf('actionRequired', 'readFailure'), [{ type: 'syncStatusChanged', connectionId: conn1, status: 'attention', code: 'ACTION_REQUIRED', retryable: false }])
  t.same(statusOf('disconnected'), [], 'a disconnected connection has no status left')
  const twoMoves = translate([
    { kind: 'connection', at, connectionId: conn1, state: 'catchingUp', reason: null },
    { kind: 'connection', at, connectionId: conn1, state: 'healthy', reason: null }
  ])
  t.same(twoMoves.filter((message) => message.type === 'syncStatusChanged'), [{ type: 'syncStatusChanged', connectionId: conn1, status: 'healthy' }], 'the latest move of a page only')
})

test('a revoked grant adds CONNECTION_REVOKED and its legacy alias GOOGLE_REVOKED, both with the connectionId', async (t) => {
  const messages = translate([
    { kind: 'connection', at, connectionId: conn1, state: 'actionRequired', reason: 'authorizationRevoked' },
    { kind: 'connection', at, connectionId: conn1, state: 'actionRequired', reason: 'authorizationRevoked' }
  ])
  t.same(messages, [
    { type: 'calendarsChanged', reasons: ['connection'], refetchAll: false, connectionIds: [conn1] },
    { type: 'eventsChanged', reasons: ['connection'], refetchAll: false, connectionIds: [conn1] },
    { type: 'syncStatusChanged', connectionId: conn1, status: 'attention', code: 'CONNECTION_REVOKED', retryable: false },
    { type: 'syncStatusChanged', connectionId: conn1, status: 'attention', code: 'GOOGLE_REVOKED', retryable: false, aliasOf: 'CONNECTION_REVOKED' }
  ], 'reported once per connection even when the page repeats it')
})

test('the feed\'s provider of a connection is named on its status messages, so any tab labels it right', async (t) => {
  const statuses = (invalidations: Invalidation[]) => translate(invalidations).filter((message) => message.type === 'syncStatusChanged')
  t.same(statuses([{ kind: 'connection', at, connectionId: conn1, provider: 'caldav', state: 'importing', reason: null }]), [
    { type: 'syncStatusChanged', connectionId: conn1, provider: 'caldav', status: 'syncing' }
  ])
  t.same(statuses([{ kind: 'connection', at, connectionId: conn2, provider: 'caldav', state: 'actionRequired', reason: 'authorizationRevoked' }]), [
    { type: 'syncStatusChanged', connectionId: conn2, provider: 'caldav', status: 'attention', code: 'CONNECTION_REVOKED', retryable: false },
    { type: 'syncStatusChanged', connectionId: conn2, provider: 'caldav', status: 'attention', code: 'GOOGLE_REVOKED', retryable: false, aliasOf: 'CONNECTION_REVOKED' }
  ])
})

test('importProgress becomes syncStatusChanged while running and importCompleted when finished', async (t) => {
  t.same(translate([{ kind: 'importProgress', at, connectionId: conn1, phase: 'progress', operation: 'full', counts }]), [
    { type: 'syncStatusChanged', connectionId: conn1, status: 'syncing', import: { operation: 'full', counts } }
  ])
  t.same(translate([{ kind: 'importProgress', at, connectionId: conn1, phase: 'completed', operation: 'repair', counts }]), [
    { type: 'importCompleted', connectionId: conn1, operation: 'repair', counts }
  ])
  const later = { ...counts, calendarsDone: 2 }
  t.same(translate([
    { kind: 'importProgress', at, connectionId: conn1, phase: 'progress', operation: 'full', counts },
    { kind: 'importProgress', at, connectionId: conn2, phase: 'progress', operation: 'incremental', counts },
    { kind: 'importProgress', at, connectionId: conn1, phase: 'progress', operation: 'full', counts: later },
    { kind: 'importProgress', at, connectionId: conn1, phase: 'completed', operation: 'full', counts: later }
  ]), [
    { type: 'syncStatusChanged', connectionId: conn2, status: 'syncing', import: { operation: 'incremental', counts } },
    { type: 'importCompleted', connectionId: conn1, operation: 'full', counts: later }
  ], 'progress superseded within the page is dropped, the rest keeps feed order')
})

test('resyncRequired becomes a broad invalidation', async (t) => {
  t.same(translate([], true), [
    { type: 'calendarsChanged', reasons: ['resync'], refetchAll: true },
    { type: 'eventsChanged', reasons: ['resync'], refetchAll: true }
  ])
})

test('a mixed page is merged into one message per kind', async (t) => {
  t.same(translate([
    { kind: 'event', at, eventId: 'e1' },
    { kind: 'calendar', at, connectionId: conn1, calendarId: 'cal-1' },
    { kind: 'event', at, eventId: 'e2' },
    { kind: 'event', at, eventId: 'e1' },
    { kind: 'connection', at, connectionId: conn2, state: 'importing', reason: null },
    { kind: 'importProgress', at, connectionId: conn2, phase: 'progress', operation: 'full', counts }
  ]), [
    { type: 'calendarsChanged', reasons: ['calendar', 'connection'], refetchAll: false, calendarIds: ['cal-1'], connectionIds: [conn2] },
    { type: 'eventsChanged', reasons: ['event', 'calendar', 'connection'], refetchAll: false, eventIds: ['e1', 'e2'], calendarIds: ['cal-1'], connectionIds: [conn2] },
    { type: 'syncStatusChanged', connectionId: conn2, status: 'syncing', import: { operation: 'full', counts } }
  ])
})

test('more ids than one message carries turn into refetchAll', async (t) => {
  const many: Invalidation[] = Array.from({ length: MAX_IDS_PER_MESSAGE + 1 }, (_, i) => ({ kind: 'event', at, eventId: `e${i}` }))
  t.same(translate(many), [{ type: 'eventsChanged', reasons: ['event'], refetchAll: true }])
  const exactly = translate(many.slice(0, MAX_IDS_PER_MESSAGE))
  t.equal(exactly.length, 1)
  t.same((exactly[0] as { eventIds?: string[] }).eventIds?.length, MAX_IDS_PER_MESSAGE, 'the bound itself still lists ids')
})
