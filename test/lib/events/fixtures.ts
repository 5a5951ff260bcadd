import type { EventRecord } from '../../../lib/events/record.js'

export const USER = 'aaaaaaaaaaaaaaaaaaaaaaaa'

let counter = 0
function nextId (): string {
  counter += 1
  return counter.toString(16).padStart(24, '0')
}

export function standalone (fields: Partial<EventRecord> = {}): EventRecord {
  return {
    _id: nextId(),
    user: USER,
    title: 'Dentist',
    startDate: '2026-03-02T09:00:00+01:00',
    endDate: '2026-03-02T10:00:00+01:00',
    isAllDay: false,
    timeZone: 'Europe/Berlin',
    status: 'confirmed',
    origin: 'compass',
    priority: 'self',
    lastUpdated: '2026-01-01T00:00:00.000Z',
    ...fields
  }
}

export function series (fields: Partial<EventRecord> = {}): EventRecord {
  return standalone({ title: 'Standup', recurrence: { rule: ['RRULE:FREQ=WEEKLY;BYDAY=MO'] }, ...fields })
}

export function instance (base: EventRecord, fields: Partial<EventRecord> = {}): EventRecord {
  const { recurrence: _rule, ...rest } = base
  return {
    ...rest,
    _id: nextId(),
    recurrence: { eventId: base._id },
    originalStartDate: base.startDate,
    ...fields
  }
}
