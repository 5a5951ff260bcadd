// What an event's details card says, as plain rules: when it is (its date range in words), how it
// repeats, and its description cut into text and links. The description comes from anyone who can
// write to a calendar the user sees (an invitation, a shared provider calendar), so it is never
// markup: only http and https addresses become links, and everything else stays text.
import { DateTime } from 'luxon'
import type { CalendarEvent } from './events.js'
import type { RepeatForm, Weekday } from './recurrence-form.js'

export type DescriptionPart = { kind: 'text', text: string } | { kind: 'link', text: string, href: string }

// Ends at whitespace, and at the quotes and brackets that often wrap an address in prose.
const ADDRESS = /\bhttps?:\/\/[^\s<>"'`]+/gi
// Punctuation that ends a sentence more often than an address.
const TRAILING = /[.,;:!?*]+$/

/** An address's own closing brackets stay (Wikipedia's "(film)"); one that closes the prose goes. */
function trimAddress (candidate: string): string {
  let address = candidate.replace(TRAILING, '')
  for (const [open, close] of [['(', ')'], ['[', ']']] as const) {
    while (address.endsWith(close) && address.split(close).length > address.split(open).length) {
      address = address.slice(0, -1).replace(TRAILING, '')
    }
  }
  return address
}

/** The description as text and links, in order; adjacent text is one part. */
export function descriptionParts (text: string): DescriptionPart[] {
  const parts: DescriptionPart[] = []
  const pushText = (value: string) => {
    if (value === '') return
    const last = parts[parts.length - 1]
    if (last?.kind === 'text') last.text += value
    else parts.push({ kind: 'text', text: value })
  }
  let from = 0
  for (const match of text.matchAll(ADDRESS)) {
    const start = match.index
    const address = trimAddress(match[0])
    let href: string | null = null
    try {
      const url = new URL(address)
      // The pattern only finds http(s), but the parsed URL is what the browser would follow.
      if ((url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '') href = url.href
    } catch {
      href = null
    }
    if (href === null) continue
    pushText(text.slice(from, start))
    parts.push({ kind: 'link', text: address, href })
    from = start + address.length
  }
  pushText(text.slice(from))
  return parts
}

const DAY_FORMAT = 'cccc, d LLLL yyyy'
const TIME_FORMAT = 'HH:mm'

/**
 * When the event is, in `zone`: "Monday, 2 March 2026, 09:00 – 10:00"; across days each end with
 * its date; an all-day event by its days ("Monday, 2 March 2026 – Wednesday, 4 March 2026, all day").
 */
export function whenInWords (event: Pick<CalendarEvent, 'startDate' | 'endDate' | 'isAllDay'>, zone: string): string {
  if (event.isAllDay) {
    const first = DateTime.fromISO(event.startDate, { zone }).setLocale('en-GB')
    // The API's end of an all-day event is the day after its last.
    const last = DateTime.fromISO(event.endDate, { zone }).setLocale('en-GB').minus({ days: 1 })
    return last <= first ? `${first.toFormat(DAY_FORMAT)}, all day` : `${first.toFormat(DAY_FORMAT)} – ${last.toFormat(DAY_FORMAT)}, all day`
  }
  const start = DateTime.fromISO(event.startDate, { setZone: true }).setZone(zone).setLocale('en-GB')
  const end = DateTime.fromISO(event.endDate, { setZone: true }).setZone(zone).setLocale('en-GB')
  if (start.hasSame(end, 'day')) return `${start.toFormat(DAY_FORMAT)}, ${start.toFormat(TIME_FORMAT)} – ${end.toFormat(TIME_FORMAT)}`
  return `${start.toFormat(DAY_FORMAT)}, ${start.toFormat(TIME_FORMAT)} – ${end.toFormat(DAY_FORMAT)}, ${end.toFormat(TIME_FORMAT)}`
}

const UNITS = { DAILY: ['day', 'days'], WEEKLY: ['week', 'weeks'], MONTHLY: ['month', 'months'], YEARLY: ['year', 'years'] } as const
const DAY_NAMES: Record<Weekday, string> = { MO: 'Monday', TU: 'Tuesday', WE: 'Wednesday', TH: 'Thursday', FR: 'Friday', SA: 'Saturday', SU: 'Sunday' }

function listInWords (items: string[]): string {
  return items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1] as string}`
}

/** The repeat rule as a sentence ("Every 2 weeks on Monday and Wednesday, 5 times"), or null for none. */
export function repeatInWords (form: RepeatForm | null): string | null {
  if (form === null || form.frequency === '') return null
  const [one, many] = UNITS[form.frequency]
  let words = form.interval === 1 ? `Every ${one}` : `Every ${form.interval} ${many}`
  if (form.frequency === 'WEEKLY' && form.weekdays.length > 0) {
    words += form.weekdays.length === 7 ? ' on every day' : ` on ${listInWords(form.weekdays.map((day) => DAY_NAMES[day]))}`
  }
  if (form.ends === 'count') words += form.count === 1 ? ', once' : `, ${form.count} times`
  if (form.ends === 'until') {
    const until = DateTime.fromISO(form.until).setLocale('en-GB')
    if (until.isValid) words += `, until ${until.toFormat('d LLLL yyyy')}`
  }
  return words
}
