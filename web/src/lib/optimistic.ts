// What a shown list of events looks like once a change is applied, as far as the client can know
// before the server answers. The same rules draw a write the moment it is made and keep drawing a
// write the server has not taken yet (offline, refused), so a list read again from the server does
// not wipe it out.
import { eventEnd, eventStart } from './grid.js'
import { seriesIdOf, type ApplyTo, type CalendarEvent, type EventChange } from './events.js'
import type { EditPlan } from './series-edit.js'

/** A change as the shown lists see it: a plan of the dialog or a drag, or a deletion. */
export type Effect =
  | { kind: 'plan', plan: EditPlan }
  | { kind: 'delete', event: CalendarEvent, applyTo: ApplyTo }

function overlaps (event: CalendarEvent, from: number, to: number, zone: string): boolean {
  return eventStart(event, zone).toMillis() < to && eventEnd(event, zone).toMillis() > from
}

function asEvent (change: EventChange, id: string): CalendarEvent {
  const { user: _user, lastUpdated: _lastUpdated, ...fields } = change
  return { title: '', isAllDay: false, timeZone: 'UTC', status: 'confirmed', origin: 'compass', priority: 'unassigned', ...fields, _id: id }
}

function upsert (list: CalendarEvent[], event: CalendarEvent, from: number, to: number, zone: string): CalendarEvent[] {
  const rest = list.filter((item) => item._id !== event._id)
  return overlaps(event, from, to, zone) ? [...rest, event] : rest
}

function applyPlan (list: CalendarEvent[], plan: EditPlan, from: number, to: number, zone: string): CalendarEvent[] {
  switch (plan.kind) {
    case 'create':
      return upsert(list, asEvent(plan.change, (plan.change._id as string).replace(/^optimistic-/, '')), from, to, zone)
    case 'replace': {
      // Not in view (an occurrence brought back, an event moved in from another range): drawn as
      // sent. A whole series is left to the next read, which expands it.
      if (!list.some((event) => event._id === plan.id)) {
        return plan.change.recurrence?.rule === undefined && plan.change.status !== 'cancelled' ? upsert(list, asEvent(plan.change, plan.id), from, to, zone) : list
      }
      const replaced = list.flatMap((event) => {
        if (event._id !== plan.id) return [event]
        const next = { ...event, ...asEvent(plan.change, event._id) }
        return overlaps(next, from, to, zone) ? [next] : []
      })
      // A whole series changes: its occurrences are recomputed by the next read.
      return replaced.filter((event) => event._id === plan.id || seriesIdOf(event) !== plan.id || event.recurrence?.eventId === undefined)
    }
    case 'split': {
      const cut = list.find((event) => event._id === plan.deleteId)
      const seriesId = cut === undefined ? null : seriesIdOf(cut)
      const cutAt = cut === undefined ? Infinity : eventStart(cut, zone).toMillis()
      const kept = list.filter((event) => seriesId === null || seriesIdOf(event) !== seriesId || eventStart(event, zone).toMillis() < cutAt)
      return upsert(kept, asEvent(plan.create, plan.create._id as string), from, to, zone)
    }
  }
}

function applyDelete (list: CalendarEvent[], target: CalendarEvent, applyTo: ApplyTo, keepTarget: boolean, zone: string): CalendarEvent[] {
  const seriesId = seriesIdOf(target)
  const cutAt = eventStart(target, zone).toMillis()
  return list.filter((event) => {
    if (event._id === target._id) return keepTarget
    if (seriesId === null || applyTo === 'this' || seriesIdOf(event) !== seriesId) return true
    return applyTo === 'thisAndFollowing' && eventStart(event, zone).toMillis() < cutAt
  })
}

/**
 * The list of [from, to) once `effect` is applied. `keepDeleted`: a deletion the server has not
 * taken keeps its event on the grid, marked, so it can be retried or given up there.
 */
export function applyEffect (list: CalendarEvent[], effect: Effect, range: { from: Date, to: Date }, zone: string, keepDeleted = false): CalendarEvent[] {
  const from = range.from.getTime()
  const to = range.to.getTime()
  return effect.kind === 'plan' ? applyPlan(list, effect.plan, from, to, zone) : applyDelete(list, effect.event, effect.applyTo, keepDeleted, zone)
}

/** The ids the change is shown on: where a "not saved" mark belongs. */
export function shownOn (effect: Effect): string[] {
  if (effect.kind === 'delete') return [effect.event._id]
  switch (effect.plan.kind) {
    case 'create': return [(effect.plan.change._id as string).replace(/^optimistic-/, '')]
    case 'replace': return [effect.plan.id]
    case 'split': return [effect.plan.create._id as string]
  }
}
