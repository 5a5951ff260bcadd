// A change made here meets a provider version that another device changed since the version both
// sides last agreed on (the base). Each part of the event is merged on its own: a part only one
// side changed takes that side's value, so a location set at the provider and a title changed here
// both survive; a part both changed goes to the newer change (last writer wins, per part only).
// A series' rule is not merged: each provider writes it in its own terms (Graph has no exclusions
// to read back), so a change here writes its own, as the newer change did before.
import type { EventContent, ProviderWriteSubject } from '../../schemas/sync/index.js'
import { providerVersionWins } from './provider-sync.js'
import { canonicalReminders } from '../../lib/events/reminders.js'

type Part = (content: EventContent) => unknown

const PARTS: Record<string, { read: Part, write: (into: EventContent, from: EventContent) => EventContent }> = {
  title: { read: (content) => content.title, write: (into, from) => ({ ...into, title: from.title }) },
  description: {
    read: (content) => content.description ?? '',
    write: (into, from) => {
      const { description: _mine, ...rest } = into
      return from.description === undefined || from.description === '' ? rest : { ...rest, description: from.description }
    }
  },
  location: {
    read: (content) => content.location ?? '',
    write: (into, from) => {
      const { location: _mine, ...rest } = into
      return from.location === undefined || from.location === '' ? rest : { ...rest, location: from.location }
    }
  },
  // The list as a whole: a reminder added at one side and one removed at the other are two
  // changes of one part, and the newer wins, as with any part both changed.
  reminders: {
    read: (content) => content.reminders === undefined ? null : canonicalReminders(content.reminders).map((reminder) => reminder.minutes),
    write: (into, from) => {
      const { reminders: _mine, ...rest } = into
      return from.reminders === undefined ? rest : { ...rest, reminders: from.reminders }
    }
  },
  // The event's own colour, absent (the calendar's) a value of its own.
  color: {
    read: (content) => content.color ?? null,
    write: (into, from) => {
      const { color: _mine, ...rest } = into
      return from.color === undefined ? rest : { ...rest, color: from.color }
    }
  },
  // Start, end, all-day and zone move together: half of one side's move and half of the other's is nobody's.
  timing: {
    read: (content) => content.isAllDay
      ? [true, content.startDate, content.endDate]
      : [false, Date.parse(content.startDate), Date.parse(content.endDate), content.timeZone],
    write: (into, from) => ({ ...into, startDate: from.startDate, endDate: from.endDate, isAllDay: from.isAllDay, timeZone: from.timeZone })
  }
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b)

/** Whether two versions show the same event, part by part. */
function sameContent (a: EventContent, b: EventContent): boolean {
  return Object.values(PARTS).every((part) => same(part.read(a), part.read(b)))
}

export interface Merged {
  content: EventContent
  /** Parts the provider's version gave (theirs kept over ours). */
  theirs: string[]
}

/**
 * `ours` merged with `theirs` against `base`: per part, the side that changed it; where both did,
 * `ours` when `oursIsNewer`, else theirs.
 */
export function mergeChange (base: EventContent, ours: EventContent, theirs: EventContent, oursIsNewer: boolean): Merged {
  let content = ours
  const fromTheirs: string[] = []
  for (const [name, part] of Object.entries(PARTS)) {
    const [b, o, t] = [part.read(base), part.read(ours), part.read(theirs)]
    if (same(o, t)) continue
    const theirsWins = same(o, b) || (!same(t, b) && !oursIsNewer)
    if (theirsWins) {
      content = part.write(content, theirs)
      fromTheirs.push(name)
    }
  }
  return { content, theirs: fromTheirs }
}

export type WritePlan =
  /** The provider's version stays: it is newer, or it already holds what the merge gives. */
  | { kind: 'theirs' }
  /** Write `content`; `merged`: it holds parts of the provider's version, which the backend must learn. */
  | { kind: 'write', content: EventContent | undefined, merged: boolean }

/**
 * What a write of a live event does with the provider's current version (`theirs`, null when the
 * provider has none; `ownCopy` when it is still what our own last write left). Without a base to
 * merge against, the newer change wins whole, as before.
 */
export function planWrite (subject: ProviderWriteSubject, theirs: { content?: EventContent, updated: string } | null, ownCopy: boolean): WritePlan {
  if (theirs === null || ownCopy) return { kind: 'write', content: subject.content, merged: false }
  const oursIsNewer = !providerVersionWins(theirs.updated, subject.lastUpdated)
  if (subject.base === undefined || subject.content === undefined || theirs.content === undefined) {
    return oursIsNewer ? { kind: 'write', content: subject.content, merged: false } : { kind: 'theirs' }
  }
  const merged = mergeChange(subject.base, subject.content, theirs.content, oursIsNewer)
  // The rule is ours whatever the merge (see above): a change of it alone is still a change to write.
  if (sameContent(merged.content, theirs.content) && same(merged.content.recurrence ?? [], theirs.content.recurrence ?? [])) return { kind: 'theirs' }
  return { kind: 'write', content: merged.content, merged: merged.theirs.length > 0 }
}
