import { test } from 'tap'
import { waitUntil } from '../processes.js'
import { randomBytes } from 'node:crypto'
import { buildApp, signUp, startDependencies, uniqueEmail } from '../helper.js'
import { startSyncService } from './sync-service.js'

const BASE = { title: 'Run', startDate: '2026-05-01T07:00:00Z', endDate: '2026-05-01T08:00:00Z' }

test('Sync stopped, writes made, backend restarted, Sync started: every report arrives once', async (t) => {
  const deps = await startDependencies(t, { replicaSet: true })
  const sync = await startSyncService(t, deps.databaseUri(`sync_${randomBytes(4).toString('hex')}`))
  await sync.stop()

  const first = await buildApp(t, deps, { syncUrl: sync.url, internalAuthToken: sync.internalAuthToken })
  const ivy = await signUp(first.app, { email: uniqueEmail('ivy'), password: 'correct horse 7' })
  const ids = [0, 1, 2].map(() => randomBytes(12).toString('hex'))
  const writes = [
    { method: 'POST' as const, url: '/api/event', payload: ids.map((_id) => ({ ...BASE, _id })) },
    { method: 'PUT' as const, url: `/api/event/${ids[0]}`, payload: { ...BASE, title: 'Long run' } },
    { method: 'DELETE' as const, url: `/api/event/${ids[1]}` }
  ]
  for (const write of writes) {
    const response = await first.app.inject({ ...write, headers: ivy.headers })
    t.equal(response.statusCode, 204, `${write.method} ${write.url}`)
  }
  t.equal(await first.app.outbox.pending(ivy.userId), 5, 'five reports wait: three creates, an update, a delete')
  await first.app.close()

  const second = await buildApp(t, deps, {}, () => first.config)
  await sync.start()
  await waitUntil(async () => await second.app.outbox.pending() === 0, 'the outbox to drain', 10_000)
  t.equal(await second.app.outbox.pending(), 0, 'the restarted backend delivered the outbox')

  const reports = await sync.reports(ivy.userId)
  t.equal(reports.length, 5, 'every report arrived')
  t.equal(new Set(reports.map((report) => report.idempotencyKey)).size, 5, 'each once')
  t.equal(await sync.eventInvalidations(ivy.userId), 5, 'one change-feed entry per write')
  const stored = await second.app.mongo.db.collection<{ eventId: string, title: string }>('events').find({ eventId: { $in: ids } }).sort({ eventId: 1 }).toArray()
  t.same(stored.map((event) => event.title).sort(), ['Long run', 'Run'], 'the own data stood all along')
})
