import { test } from 'tap'
import { markOwnWrites } from '../../sync/lib/own-writes.js'
import type { ProviderEvent } from '../../schemas/sync/index.js'
import { WrittenVersionStore, type OwnWriteIndex } from '../../sync/stores/written-versions.js'
import { MongoClient } from 'mongodb'
import { startDatabase } from './helper.js'

const EVENT_ID = 'a'.repeat(24)
const content = { title: 'Standup', startDate: '2026-05-04T09:00:00Z', endDate: '2026-05-04T09:15:00Z', isAllDay: false, timeZone: 'UTC' }
const item = (fields: Partial<ProviderEvent>): ProviderEvent => ({ providerEventId: 'AAMk1', etag: 'W/"1"', updated: '2026-05-01T00:00:00.000Z', status: 'confirmed', content, ...fields })
const written = { eventId: EVENT_ID, version: 'W/"1"', providerEventId: 'AAMk1', lastUpdated: '2026-05-01T10:00:00.500Z' }
const index = (rows = [written]): OwnWriteIndex => ({
  byEventId: new Map(rows.map((row) => [row.eventId, row])),
  byProviderEventId: new Map(rows.map((row) => [row.providerEventId, row]))
})

test('our own write read back is marked, and named by our id where the provider left it out', async (t) => {
  t.same(markOwnWrites([item({ eventId: EVENT_ID })], index()), [item({ eventId: EVENT_ID, ownWrite: true })], 'named by our id, same version')
  t.same(markOwnWrites([item({})], index()), [item({ eventId: EVENT_ID, ownWrite: true })], 'Graph\'s delta without the id: found by the provider id our insert got')
  t.same(markOwnWrites([item({ etag: 'W/"2"', updated: '2026-05-01T10:05:00.000Z' })], index()), [item({ etag: 'W/"2"', eventId: EVENT_ID, updated: '2026-05-01T10:05:00.000Z' })], 'changed there since: named, not marked')
  t.same(markOwnWrites([item({ etag: 'W/"2"', updated: '2026-05-01T10:00:00.000Z' })], index()), [item({ etag: 'W/"2"', eventId: EVENT_ID, updated: '2026-05-01T10:00:00.501Z' })],
    'changed there since, stamped in whole seconds before the version our write carried: told as just after it')
  t.same(markOwnWrites([item({ providerEventId: 'gseries_20260511T070000Z', eventId: EVENT_ID, etag: 'W/"3"' })], index()),
    [item({ providerEventId: 'gseries_20260511T070000Z', eventId: EVENT_ID, etag: 'W/"3"' })], 'an occurrence carrying its series\' id is not the series\' copy')
  t.same(markOwnWrites([item({ eventId: EVENT_ID, etag: undefined })], index()), [item({ eventId: EVENT_ID, etag: undefined })], 'no version to compare: not marked')
  t.same(markOwnWrites([item({ status: 'cancelled', content: undefined })], index()), [item({ status: 'cancelled', content: undefined })], 'a removal stays as the provider said it')
  t.same(markOwnWrites([item({ providerEventId: 'AAMk2', etag: 'W/"1"' })], index()), [item({ providerEventId: 'AAMk2', etag: 'W/"1"' })], 'another provider event: untouched')
  const other = 'b'.repeat(24)
  t.same(markOwnWrites([item({ eventId: other })], index()), [item({ eventId: other })], 'an item naming another event keeps its own id')
  const events = [item({})]
  t.equal(markOwnWrites(events, index([])), events, 'nothing written: the page as it came')
})

test('a copy at the version an earlier write of ours left is ours, and only as new as the change that write carried', async (t) => {
  const rows = [{ ...written, version: 'W/"3"', lastUpdated: '2026-05-01T10:02:00.000Z', earlier: [{ version: 'W/"2"', lastUpdated: '2026-05-01T10:01:00.000Z' }, { version: 'W/"1"', lastUpdated: '2026-05-01T10:00:00.500Z' }] }]
  // Stamped when our first write reached the provider, after the change here that the last write carries.
  const stale = item({ etag: 'W/"1"', updated: '2026-05-01T10:05:00.000Z' })
  t.same(markOwnWrites([stale], index(rows)), [item({ etag: 'W/"1"', eventId: EVENT_ID, ownWrite: true, updated: '2026-05-01T10:00:00.500Z' })], 'marked ours, dated by the backend version it carried')
  t.same(markOwnWrites([item({ etag: 'W/"3"' })], index(rows)), [item({ etag: 'W/"3"', eventId: EVENT_ID, ownWrite: true })], 'the last version as before')
  t.same(markOwnWrites([item({ etag: 'W/"9"', updated: '2026-05-01T10:05:00.000Z' })], index(rows)), [item({ etag: 'W/"9"', eventId: EVENT_ID, updated: '2026-05-01T10:05:00.000Z' })], 'a version none of our writes left is a change there')
})

test('our last copy is dated as the write recorded it: to the millisecond, where the provider keeps whole seconds', async (t) => {
  // Our merge: stamped 10:00:01.001 by Sync, after another client's version of 10:00:01; LAST-MODIFIED says 10:00:01.
  const row = { ...written, updated: '2026-05-01T10:00:01.001Z' }
  t.same(markOwnWrites([item({ etag: 'W/"1"', updated: '2026-05-01T10:00:01.000Z' })], index([row])), [item({ etag: 'W/"1"', eventId: EVENT_ID, ownWrite: true, updated: '2026-05-01T10:00:01.001Z' })])
  t.same(markOwnWrites([item({ etag: 'W/"2"', updated: '2026-05-01T10:00:01.000Z' })], index([row])), [item({ etag: 'W/"2"', eventId: EVENT_ID, updated: '2026-05-01T10:00:01.002Z' })],
    'a change there since, stamped in the same second: told as just after our write, not just after the change it carried')
})

test('the store keeps the versions our earlier writes left, newest first, four at most', async (t) => {
  const client = new MongoClient(await startDatabase(t))
  await client.connect()
  t.teardown(() => client.close())
  const store = new WrittenVersionStore(client.db(`own_writes_${Date.now()}`))
  await store.ensureIndexes()
  const connection = 'c'.repeat(24)
  for (const n of [1, 2, 2, 3, 4, 5, 6]) await store.record(connection, EVENT_ID, { version: `W/"${n}"`, providerEventId: 'AAMk1', lastUpdated: `2026-05-01T10:0${n}:00.000Z`, updated: `2026-05-01T10:0${n}:00.00${n}Z` }, new Date())
  const { byEventId } = await store.ownWritesOf(connection, [{ eventId: EVENT_ID, providerEventId: 'AAMk1' }])
  t.match(await store.get(connection, EVENT_ID), { version: 'W/"6"', updated: '2026-05-01T10:06:00.006Z' }, 'the last write, with the time its copy is read at')
  t.match(byEventId.get(EVENT_ID), {
    version: 'W/"6"',
    updated: '2026-05-01T10:06:00.006Z',
    earlier: [
      { version: 'W/"5"', lastUpdated: '2026-05-01T10:05:00.000Z' },
      { version: 'W/"4"', lastUpdated: '2026-05-01T10:04:00.000Z' },
      { version: 'W/"3"', lastUpdated: '2026-05-01T10:03:00.000Z' },
      { version: 'W/"2"', lastUpdated: '2026-05-01T10:02:00.000Z' }
    ]
  })
  t.equal(byEventId.get(EVENT_ID)?.earlier?.length, 4, 'a version written twice is kept once, and the oldest go')

  // Written over another client's version W/"x" (a change there since W/"6"), then over our own W/"7".
  await store.record(connection, EVENT_ID, { version: 'W/"7"', providerEventId: 'AAMk1', lastUpdated: '2026-05-01T10:07:00.000Z', replaced: 'W/"x"' }, new Date())
  await store.record(connection, EVENT_ID, { version: 'W/"8"', providerEventId: 'AAMk1', lastUpdated: '2026-05-01T10:08:00.000Z', replaced: 'W/"7"' }, new Date())
  const after = (await store.ownWritesOf(connection, [{ eventId: EVENT_ID, providerEventId: 'AAMk1' }])).byEventId.get(EVENT_ID)
  t.same(after?.earlier?.slice(0, 3), [
    { version: 'W/"7"', lastUpdated: '2026-05-01T10:07:00.000Z' },
    { version: 'W/"x"', lastUpdated: '2026-05-01T10:06:59.999Z' },
    { version: 'W/"6"', lastUpdated: '2026-05-01T10:06:00.000Z' }
  ], 'the other client\'s version our write replaced is dated just before the change that write carried; our own replaced version is kept once')
  t.notOk('replaced' in (after ?? {}), 'the replaced version is no field of the row')
  t.same(markOwnWrites([item({ etag: 'W/"x"', updated: '2026-05-01T10:09:00.000Z' })], { byEventId: new Map(after === undefined ? [] : [[EVENT_ID, after]]), byProviderEventId: new Map(after === undefined ? [] : [['AAMk1', after]]) }),
    [item({ etag: 'W/"x"', eventId: EVENT_ID, ownWrite: true, updated: '2026-05-01T10:06:59.999Z' })], 'a page holding it, stamped by a clock ahead of ours: older than our write all the same')
})
