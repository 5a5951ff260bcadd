// Calendar files (.ics) of one calendar, through the backend (docs/events.md, Calendar files): the
// file is written and read there, so the bundle carries no iCalendar code.
import { api } from './api.js'
import { invalidateEvents } from './query.js'

interface ImportResult { imported: number, skipped: number, errors: string[] }

/** Saves the calendar's file: fetched with the session (refreshed if need be), then handed to the browser as a download. */
export async function exportCalendar (key: string, name: string): Promise<void> {
  const text = await api<string>('/events/export.ics', { query: { calendarId: key } })
  const url = URL.createObjectURL(new Blob([text], { type: 'text/calendar' }))
  const link = document.createElement('a')
  link.href = url
  link.download = `${name.replace(/[\\/:*?"<>|]+/g, '-')}.ics`
  link.click()
  setTimeout(() => URL.revokeObjectURL(url), 60_000)
}

/** Imports a file into the calendar and answers what it did, in a sentence. */
export async function importCalendar (key: string, name: string, file: Blob): Promise<string> {
  const result = await api<ImportResult>('/events/import', { method: 'POST', query: { calendarId: key }, file: { body: file, type: 'text/calendar' } })
  await invalidateEvents()
  const events = (count: number) => `${count} event${count === 1 ? '' : 's'}`
  return [
    `Imported ${events(result.imported)} into ${name}`,
    result.skipped > 0 ? `; ${events(result.skipped)} already there` : '',
    result.errors.length > 0 ? `; ${events(result.errors.length)} not imported (${result.errors[0] ?? ''}${result.errors.length > 1 ? ', …' : ''})` : '',
    '.'
  ].join('')
}
