import type { NewOutboxEntry, OutboxRecord } from '../outbox.js'
import { outboxRecords } from '../outbox.js'
import type { PersistencePlan } from './transition.js'

/** The change reports a set of plans owes the Sync service, in plan order. */
export function eventChangeEntries (plans: PersistencePlan[]): NewOutboxEntry[] {
  const entries: NewOutboxEntry[] = []
  for (const plan of plans) {
    if (plan.report === null) continue
    entries.push({
      kind: 'eventChange',
      report: {
        eventId: plan.report.eventId,
        operation: plan.report.operation,
        ...(plan.report.calendarId === undefined ? {} : { calendarId: plan.report.calendarId })
      }
    })
  }
  return entries
}

/** The outbox records of a set of plans, as the write that carries them out stores them. */
export function outboxRecordsFor (userId: string, plans: PersistencePlan[], now: Date): OutboxRecord[] {
  return outboxRecords(userId, eventChangeEntries(plans), now)
}
