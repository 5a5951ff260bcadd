// What Sync is told of an event write: the change report each plan of a request owes it (the
// event's content in the contract's terms, what was done, which provider copy it concerns), as
// outbox entries written with the change itself.
import type { EventContent, EventOperation, ProviderWriteSubject } from '../../schemas/sync/index.js'
import type { ProviderRecord } from './record.js'
import type { NewOutboxEntry, OutboxRecord } from '../outbox.js'
import { outboxRecords } from '../outbox.js'
import type { EventRecord } from './record.js'
import type { PersistencePlan } from './transition.js'

/** An event's content in the terms the Sync contract shares. */
export function eventContentOf (event: EventRecord): EventContent {
  return {
    title: event.title,
    startDate: event.startDate,
    endDate: event.endDate,
    isAllDay: event.isAllDay,
    timeZone: event.timeZone,
    ...(event.description === undefined ? {} : { description: event.description }),
    ...(event.location === undefined ? {} : { location: event.location }),
    ...(event.reminders === undefined ? {} : { reminders: event.reminders }),
    ...(event.color === undefined ? {} : { color: event.color }),
    ...(event.recurrence?.rule === undefined ? {} : { recurrence: event.recurrence.rule })
  }
}

/**
 * What a provider write needs of the event, so Sync never has to call back (docs/design.md, "Us ->
 * provider"): the content after the change (none for a delete), the provider identity it has,
 * and for an occurrence its series' provider id and original start.
 */
function providerWriteSubject (event: EventRecord, operation: EventOperation, series: EventRecord | undefined, now: Date): ProviderWriteSubject {
  const subject: ProviderWriteSubject = { lastUpdated: operation === 'delete' ? now.toISOString() : event.lastUpdated }
  if (operation !== 'delete') {
    subject.content = eventContentOf(event)
    // The provider's version the change was made on, so Sync merges it with a change made there meanwhile.
    const base = (event as ProviderRecord).providerBase
    if (base !== undefined) subject.base = base
  }
  if (event.providerEventId !== undefined) subject.providerEventId = event.providerEventId
  if (series?.providerEventId !== undefined) subject.seriesProviderEventId = series.providerEventId
  if (event.recurrence?.eventId !== undefined) subject.seriesEventId = event.recurrence.eventId
  if (event.originalStartDate !== undefined) subject.originalStartDate = event.originalStartDate
  if (event.status === 'cancelled') subject.cancelled = true
  return subject
}

/**
 * The change reports a set of plans owes the Sync service, in plan order. `known` are the events
 * as they were before (and the series involved); the plans' own writes say what they became.
 */
export function eventChangeEntries (plans: PersistencePlan[], known: EventRecord[] = [], now: Date = new Date()): NewOutboxEntry[] {
  const records = new Map(known.map((record) => [record._id, record]))
  for (const plan of plans) {
    for (const write of plan.writes) {
      if (write.kind === 'insert' || write.kind === 'replace') records.set(write.event._id, write.event)
    }
  }
  const entries: NewOutboxEntry[] = []
  for (const plan of plans) {
    if (plan.report === null) continue
    const event = records.get(plan.report.eventId)
    const seriesId = event?.recurrence?.eventId
    entries.push({
      kind: 'eventChange',
      report: {
        eventId: plan.report.eventId,
        operation: plan.report.operation,
        ...(plan.report.calendarId === undefined ? {} : { calendarId: plan.report.calendarId }),
        ...(event === undefined ? {} : { subject: providerWriteSubject(event, plan.report.operation, seriesId === undefined ? undefined : records.get(seriesId), now) })
      }
    })
  }
  return entries
}

/** The outbox records of a set of plans, as the write that carries them out stores them. */
export function outboxRecordsFor (userId: string, plans: PersistencePlan[], now: Date): OutboxRecord[] {
  return outboxRecords(userId, eventChangeEntries(plans), now)
}
