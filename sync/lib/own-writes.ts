// Which provider events are our own writes read back, and which were changed there since. The
// write-back's record (the version it left, the provider id it got, the backend version it
// carried) names them even where the provider drops our event id (Graph's delta leaves extended
// properties out): such an item gets its event id back, so the backend links it to the event it
// came from.
//  - An unchanged copy is marked `ownWrite`, so that it cannot bring back an event deleted here
//    after that write was made (its `updated` is only when the write arrived there). It is dated
//    as the write recorded it: CalDAV's LAST-MODIFIED keeps whole seconds of a stamp that Sync
//    made to the millisecond, after the version the write carried and the one it replaced.
//  - A copy at the version an earlier write of ours left (a page read before our last write
//    arrived) is ours too, and only as new as the backend version that earlier write carried: it
//    cannot replace what the backend changed since (a series cut while that write waited).
//  - So is a copy at the version another client left that our last write was made over: the
//    write replaced it, so it is older than the change that write carried, whatever time the
//    other client's clock gave it (`WrittenVersionStore.record`).
//  - A copy changed there since our write was changed after that write, and so after the backend
//    version it carried. A provider that stamps in whole seconds (CalDAV's LAST-MODIFIED) can
//    still say an earlier time than the write's milliseconds; it is told as just after it, so the
//    newer change is not taken for an older one.
import type { ProviderEvent } from '../../schemas/sync/index.js'
import type { OwnWriteIndex, OwnWriteRow } from '../stores/written-versions.js'

function changedSince (item: ProviderEvent, written: OwnWriteRow): ProviderEvent {
  const ours = Math.max(...[written.lastUpdated, written.updated].flatMap((time) => time === undefined ? [] : [Date.parse(time)]))
  if (ours === -Infinity) return item
  return Date.parse(item.updated) > ours ? item : { ...item, updated: new Date(ours + 1).toISOString() }
}

export function markOwnWrites (events: ProviderEvent[], own: OwnWriteIndex): ProviderEvent[] {
  if (own.byEventId.size === 0 && own.byProviderEventId.size === 0) return events
  return events.map((item) => {
    const written = item.eventId !== undefined ? own.byEventId.get(item.eventId) : own.byProviderEventId.get(item.providerEventId)
    if (written === undefined || item.status !== 'confirmed' || item.etag === undefined) return item
    // Google's occurrences carry their series' properties, our event id among them: only the
    // provider event the write made is that write's copy.
    if (written.providerEventId !== undefined && written.providerEventId !== item.providerEventId) return item
    const named = item.eventId === undefined ? { ...item, eventId: written.eventId } : item
    if (item.etag === written.version) return { ...named, ownWrite: true as const, ...(written.updated === undefined ? {} : { updated: written.updated }) }
    const earlier = written.earlier?.find((version) => version.version === item.etag)
    if (earlier !== undefined) return { ...named, ownWrite: true as const, ...(earlier.lastUpdated === undefined ? {} : { updated: earlier.lastUpdated }) }
    return changedSince(named, written)
  })
}
