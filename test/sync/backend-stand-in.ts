// The backend's provider-events endpoints as a test fixture for the Sync service's provider tests:
// it checks the service token and the contract, records every batch, removal and revocation, and
// keeps each calendar's events by provider id per generation as the backend would.
import Fastify from 'fastify'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { Test } from 'tap'
import { BACKEND_INTERNAL_PATHS, ProviderAccountClaimSchema, ProviderCalendarRemovalSchema, ProviderEventBatchSchema, ProviderWriteStateSchema } from '../../schemas/sync/index.js'
import type { ProviderAccountClaim, ProviderCalendarRemoval, ProviderEvent, ProviderEventBatch, ProviderWriteState } from '../../schemas/sync/index.js'

export const SERVICE_TOKEN = 'backend-service-token-0123456789'

const batchCheck = TypeCompiler.Compile(ProviderEventBatchSchema)
const removalCheck = TypeCompiler.Compile(ProviderCalendarRemovalSchema)
const claimCheck = TypeCompiler.Compile(ProviderAccountClaimSchema)
const writeStateCheck = TypeCompiler.Compile(ProviderWriteStateSchema)

/**
 * The backend's provider-events endpoint as a test fixture: checks the service token and the
 * contract, records every batch, and keeps each calendar's events by provider id per generation
 * as the backend would (a `complete` page drops the other generations).
 */
export interface BackendStandIn {
  url: string
  batches: ProviderEventBatch[]
  removals: ProviderCalendarRemoval[]
  /** Revoked grants Sync told the backend of. */
  revocations: Array<{ userId: string, provider: string, connectionId?: string }>
  /** The next `count` batches answer 500 after nothing was applied. */
  failNext: (count: number) => void
  /** Events the user would see now, per calendar. */
  events: (calendarId: string) => Map<string, ProviderEvent>
  /** Called with each batch before it is applied, for a test to act between two pages. */
  beforeBatch: (listener: (batch: ProviderEventBatch) => unknown) => void
  /** Provider accounts Sync asked about after a connect's code exchange. */
  claims: ProviderAccountClaim[]
  /** The marks Sync set on events whose change their provider does not have (and their clearing). */
  writeStates: ProviderWriteState[]
  /** Provider accounts (by `${provider}:${accountId}`) another user holds: their claims answer conflict. */
  heldByOthers: Set<string>
}

export async function startBackendStandIn (t: Test): Promise<BackendStandIn> {
  const server = Fastify({ bodyLimit: 16 * 1024 * 1024 })
  const batches: ProviderEventBatch[] = []
  const removals: ProviderCalendarRemoval[] = []
  // calendarId -> providerEventId -> { generation, event }
  const stored = new Map<string, Map<string, { generation: string | null, event: ProviderEvent }>>()
  let failures = 0
  let beforeBatch: (batch: ProviderEventBatch) => unknown = () => {}
  server.addHook('onRequest', async (request, reply) => {
    if (request.headers.authorization !== `Bearer ${SERVICE_TOKEN}`) return await reply.code(401).send({ code: 'SERVICE_TOKEN_REQUIRED' })
  })
  server.post(BACKEND_INTERNAL_PATHS.providerEvents, async (request, reply) => {
    if (!batchCheck.Check(request.body)) return await reply.code(400).send({ code: 'VALIDATION' })
    if (failures > 0) {
      failures--
      return await reply.code(500).send({ code: 'INTERNAL' })
    }
    const batch = request.body
    await beforeBatch(batch)
    batches.push(batch)
    const calendar = stored.get(batch.calendarId) ?? new Map()
    stored.set(batch.calendarId, calendar)
    let created = 0
    let updated = 0
    let deleted = 0
    let unchanged = 0
    for (const event of batch.events) {
      const before = calendar.get(event.providerEventId)
      if (event.status === 'cancelled' && event.recurringEventId === undefined) {
        if (before) deleted++
        calendar.delete(event.providerEventId)
        continue
      }
      if (before && JSON.stringify(before.event.content) === JSON.stringify(event.content) && before.event.status === event.status) unchanged++
      else if (before) updated++
      else created++
      calendar.set(event.providerEventId, { generation: batch.generation ?? before?.generation ?? null, event })
    }
    if (batch.complete === true) {
      for (const [id, entry] of calendar) if (entry.generation !== batch.generation) calendar.delete(id)
    }
    return { created, updated, deleted, unchanged, waiting: 0, superseded: 0, rejected: 0 }
  })
  const revocations: BackendStandIn['revocations'] = []
  server.post(BACKEND_INTERNAL_PATHS.grantRevoked, async (request) => {
    revocations.push(request.body as BackendStandIn['revocations'][number])
    return { sessionsRevoked: 1, streamsClosed: 0 }
  })
  const writeStates: ProviderWriteState[] = []
  server.post(BACKEND_INTERNAL_PATHS.providerWriteState, async (request, reply) => {
    if (!writeStateCheck.Check(request.body)) return await reply.code(400).send({ code: 'VALIDATION' })
    writeStates.push(request.body)
    return { updated: true }
  })
  const claims: ProviderAccountClaim[] = []
  const heldByOthers = new Set<string>()
  server.post(BACKEND_INTERNAL_PATHS.providerAccountClaim, async (request, reply) => {
    if (!claimCheck.Check(request.body)) return await reply.code(400).send({ code: 'VALIDATION' })
    claims.push(request.body)
    return { outcome: heldByOthers.has(`${request.body.provider}:${request.body.accountId}`) ? 'conflict' : 'claimed' }
  })
  server.post(BACKEND_INTERNAL_PATHS.providerCalendarRemoval, async (request, reply) => {
    if (!removalCheck.Check(request.body)) return await reply.code(400).send({ code: 'VALIDATION' })
    removals.push(request.body)
    const deleted = request.body.calendarId === undefined ? 0 : stored.get(request.body.calendarId)?.size ?? 0
    if (request.body.calendarId !== undefined) stored.delete(request.body.calendarId)
    return { deleted }
  })
  await server.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => server.close())
  const address = server.server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  return {
    url: `http://127.0.0.1:${address.port}`,
    batches,
    removals,
    revocations,
    claims,
    writeStates,
    heldByOthers,
    failNext: (count) => { failures = count },
    beforeBatch: (listener) => { beforeBatch = listener },
    events: (calendarId) => new Map([...(stored.get(calendarId) ?? new Map<string, { event: ProviderEvent }>())].map(([id, entry]) => [id, entry.event]))
  }
}
