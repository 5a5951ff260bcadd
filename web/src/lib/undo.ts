// Undo of a change: the change that puts back what was there, sent like any other (so it reaches
// the server, and from there the provider). Made from the event as it was shown before the change,
// and the stored series when a whole series or its following part changed.
import { changeOf, seriesIdOf, type CalendarEvent, type EventChange } from './events.js'
import type { Effect } from './optimistic.js'

export interface Undo {
  /** What was done, as the toast says it: "Event moved". */
  label: string
  inverse: Effect[]
}

export interface UndoContext {
  /** The event as shown before the change (for a replace, the one the plan names). */
  before: CalendarEvent | null
  /** The stored series of the event, before the change, when the change reaches beyond one occurrence. */
  series: CalendarEvent | null
}

/** Whether undoing the change needs the stored series (which may need a read). */
export function needsSeries (effect: Effect): string | null {
  if (effect.kind === 'delete') return effect.applyTo === 'this' ? null : seriesIdOf(effect.event)
  if (effect.plan.kind === 'split') return seriesIdOf({ _id: effect.plan.deleteId }) ?? null
  return null
}

function withoutId (change: EventChange): EventChange {
  const { _id: _ignored, ...fields } = change
  return fields
}

function sameExceptTimes (before: CalendarEvent, after: EventChange): boolean {
  return before.title === after.title && before.isAllDay === after.isAllDay && (before.description ?? '') === (after.description ?? '') &&
    (before.location ?? '') === (after.location ?? '')
}

function replaceLabel (before: CalendarEvent, after: EventChange): string {
  if (!sameExceptTimes(before, after) || JSON.stringify(before.recurrence?.rule) !== JSON.stringify(after.recurrence?.rule)) return 'Event changed'
  if (before.startDate === after.startDate && before.endDate !== after.endDate) return 'Event resized'
  if (before.startDate !== after.startDate) return 'Event moved'
  return 'Event changed'
}

/** The undo of `effect`, or null when what was there is not known (then no undo is offered). */
export function undoOf (effect: Effect, context: UndoContext): Undo | null {
  const { before, series } = context
  if (effect.kind === 'delete') {
    const event = effect.event
    if (seriesIdOf(event) === null) {
      return { label: 'Event deleted', inverse: [{ kind: 'plan', plan: { kind: 'create', change: changeOf(event) } }] }
    }
    if (effect.applyTo === 'this') {
      // The occurrence comes back where its deletion left a cancelled mark.
      return { label: 'Event deleted', inverse: [{ kind: 'plan', plan: { kind: 'replace', id: event._id, change: { ...withoutId(changeOf(event)), status: 'confirmed' } } }] }
    }
    if (series === null) return null
    // The whole series again, under its own id (a POST with an existing id replaces it).
    return { label: 'Events deleted', inverse: [{ kind: 'plan', plan: { kind: 'create', change: changeOf(series) } }] }
  }
  const plan = effect.plan
  switch (plan.kind) {
    case 'create': {
      const id = (plan.change._id as string).replace(/^optimistic-/, '')
      const { _id: _ignored, ...fields } = plan.change
      return { label: 'Event created', inverse: [{ kind: 'delete', event: { title: '', isAllDay: false, timeZone: 'UTC', status: 'confirmed', origin: 'compass', priority: 'unassigned', ...fields, _id: id }, applyTo: 'all' }] }
    }
    case 'replace': {
      const previous = before?._id === plan.id ? before : series?._id === plan.id ? series : null
      if (previous === null) return null
      return { label: replaceLabel(previous, plan.change), inverse: [{ kind: 'plan', plan: { kind: 'replace', id: plan.id, change: withoutId(changeOf(previous)) } }] }
    }
    case 'split': {
      if (series === null) return null
      const created = plan.create._id as string
      const { _id: _ignored, ...fields } = plan.create
      return {
        label: 'Events changed',
        inverse: [
          { kind: 'delete', event: { title: '', isAllDay: false, timeZone: 'UTC', status: 'confirmed', origin: 'compass', priority: 'unassigned', ...fields, _id: created }, applyTo: 'all' },
          { kind: 'plan', plan: { kind: 'create', change: changeOf(series) } }
        ]
      }
    }
  }
}
