// Preferences: the week's first day, the clock, the language of dates, the time zone and a second
// one, working hours, a new event's length and reminder, and each calendar's colour. Saved with
// the account (signed out, in this browser), so every view and device follows.
import { useMemo, useState } from 'preact/hooks'
import { Dialog } from './Dialog.js'
import { useStore } from '../data/store.js'
import { preferences, savePreferences } from '../data/preferences.js'
import { storedOf, type Preferences } from '../lib/preferences.js'
import { CALENDAR_PALETTE, currentZoneName, WEEK_STARTS, type WeekStart } from '../../../lib/preferences.js'
import { providerName } from '../lib/caldav.js'
import type { ShownCalendar } from '../data/calendars.js'

const WEEK_NAMES: Record<WeekStart, string> = { monday: 'Monday', sunday: 'Sunday', saturday: 'Saturday' }
const LOCALES = ['en-GB', 'en-US', 'de-DE', 'fr-FR', 'es-ES', 'it-IT', 'nl-NL', 'pt-BR', 'sv-SE', 'pl-PL', 'ja-JP', 'zh-CN']
const LENGTHS = [15, 30, 45, 60, 90, 120]
const REMINDERS = [0, 5, 10, 15, 30, 60, 1440]
const WEEKDAYS = [1, 2, 3, 4, 5, 6, 7]
const DEFAULT_HOURS = { start: '09:00', end: '17:00', days: [1, 2, 3, 4, 5] }

function localeName (locale: string): string {
  try {
    return new Intl.DisplayNames([locale], { type: 'language' }).of(locale) ?? locale
  } catch {
    return locale
  }
}

/** Every zone Intl knows, under its current name, once each. */
function zoneNames (...also: Array<string | null>): string[] {
  const known = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : []
  return [...new Set([...known, ...also.filter((zone): zone is string => zone !== null)].map(currentZoneName))].sort()
}

function minutesName (minutes: number): string {
  if (minutes === 0) return 'At the start'
  if (minutes % 1440 === 0) return `${minutes / 1440} day${minutes === 1440 ? '' : 's'}`
  if (minutes % 60 === 0) return `${minutes / 60} hour${minutes === 60 ? '' : 's'}`
  return `${minutes} minutes`
}

export function PreferencesDialog (props: { open: boolean, calendars: ShownCalendar[], onClose: () => void }) {
  return (
    <Dialog open={props.open} labelledBy='preferences-title' onClose={props.onClose}>
      {props.open && <PreferencesForm calendars={props.calendars} onClose={props.onClose} />}
    </Dialog>
  )
}

function PreferencesForm (props: { calendars: ShownCalendar[], onClose: () => void }) {
  const current = useStore(preferences)
  const [form, setForm] = useState<Preferences>(current)
  const [saving, setSaving] = useState(false)
  const zones = useMemo(() => zoneNames(current.timeZone, current.secondTimeZone), [])
  const locales = useMemo(() => [...new Set([current.locale, ...LOCALES])], [])
  const weekdayName = useMemo(() => new Intl.DateTimeFormat(form.locale, { weekday: 'short', timeZone: 'UTC' }), [form.locale])
  const change = (next: Partial<Preferences>) => setForm((previous) => ({ ...previous, ...next }))
  const hours = form.workingHours

  async function save (submit: Event) {
    submit.preventDefault()
    setSaving(true)
    const colors = Object.fromEntries(props.calendars.map((calendar) => [calendar.key, form.calendarColors[calendar.key]]).filter((entry): entry is [string, string] => entry[1] !== undefined))
    // Colours of calendars not listed now (a connection away for a while) are kept, as are their
    // reminders (the form started from every stored one and changes only those it lists).
    await savePreferences(storedOf({ ...form, calendarColors: { ...current.calendarColors, ...colors } }))
    setSaving(false)
    props.onClose()
  }

  return (
    <form onSubmit={(submit) => { save(submit).catch(() => setSaving(false)) }}>
      <h2 id='preferences-title'>Preferences</h2>
      <fieldset>
        <legend>Dates and times</legend>
        <div class='field'>
          <label for='pref-locale'>Language of dates</label>
          <select id='pref-locale' value={form.locale} onChange={(input) => change({ locale: input.currentTarget.value })}>
            {locales.map((locale) => <option key={locale} value={locale} lang={locale}>{localeName(locale)}</option>)}
          </select>
        </div>
        <div class='field'>
          <label for='pref-week'>Week starts on</label>
          <select id='pref-week' value={form.weekStart} onChange={(input) => change({ weekStart: input.currentTarget.value as WeekStart })}>
            {WEEK_STARTS.map((day) => <option key={day} value={day}>{WEEK_NAMES[day]}</option>)}
          </select>
        </div>
        <div class='field'>
          <label for='pref-clock'>Time format</label>
          <select id='pref-clock' value={form.timeFormat} onChange={(input) => change({ timeFormat: input.currentTarget.value === '12h' ? '12h' : '24h' })}>
            <option value='24h'>24-hour (14:00)</option>
            <option value='12h'>12-hour (2:00 PM)</option>
          </select>
        </div>
        <div class='field'>
          <label for='pref-zone'>Time zone</label>
          <select id='pref-zone' value={form.timeZone} onChange={(input) => change({ timeZone: input.currentTarget.value })}>
            {zones.map((zone) => <option key={zone} value={zone}>{zone.replaceAll('_', ' ')}</option>)}
          </select>
        </div>
        <div class='field'>
          <label for='pref-second-zone'>Second time zone (day and week views)</label>
          <select id='pref-second-zone' value={form.secondTimeZone ?? ''} onChange={(input) => change({ secondTimeZone: input.currentTarget.value === '' ? null : input.currentTarget.value })}>
            <option value=''>None</option>
            {zones.map((zone) => <option key={zone} value={zone}>{zone.replaceAll('_', ' ')}</option>)}
          </select>
        </div>
      </fieldset>
      <fieldset>
        <legend>Working hours</legend>
        <label class='field-inline'>
          <input type='checkbox' checked={hours !== null} onChange={(input) => change({ workingHours: input.currentTarget.checked ? DEFAULT_HOURS : null })} />
          Shade working hours in the day and week views
        </label>
        {hours !== null && (
          <>
            <div class='field-inline'>
              <label for='pref-work-start'>From</label>
              <input id='pref-work-start' type='time' value={hours.start} required onChange={(input) => change({ workingHours: { ...hours, start: input.currentTarget.value } })} />
              <label for='pref-work-end'>to</label>
              <input id='pref-work-end' type='time' value={hours.end} required onChange={(input) => change({ workingHours: { ...hours, end: input.currentTarget.value } })} />
            </div>
            <fieldset class='weekdays'>
              <legend class='sr-only'>Working days</legend>
              {WEEKDAYS.map((day) => (
                <label key={day} class='weekday-choice'>
                  <input
                    type='checkbox' checked={hours.days.includes(day)}
                    onChange={(input) => change({ workingHours: { ...hours, days: input.currentTarget.checked ? [...hours.days, day].sort() : hours.days.filter((other) => other !== day) } })}
                  />
                  {/* 5 January 1970 was a Monday. */}
                  {weekdayName.format(Date.UTC(1970, 0, 4 + day))}
                </label>
              ))}
            </fieldset>
            {hours.start >= hours.end && <p class='field-error' role='alert'>Working hours end after they start.</p>}
          </>
        )}
      </fieldset>
      <fieldset>
        <legend>New events</legend>
        <div class='field'>
          <label for='pref-length'>Default length</label>
          <select id='pref-length' value={String(form.defaultEventMinutes)} onChange={(input) => change({ defaultEventMinutes: Number(input.currentTarget.value) })}>
            {[...new Set([...LENGTHS, form.defaultEventMinutes])].sort((a, b) => a - b).map((minutes) => <option key={minutes} value={String(minutes)}>{minutesName(minutes)}</option>)}
          </select>
        </div>
        <div class='field'>
          <label for='pref-reminder'>Default reminder</label>
          <select id='pref-reminder' value={form.defaultReminderMinutes === null ? '' : String(form.defaultReminderMinutes)} onChange={(input) => change({ defaultReminderMinutes: input.currentTarget.value === '' ? null : Number(input.currentTarget.value) })}>
            <option value=''>None</option>
            {[...new Set([...REMINDERS, ...(form.defaultReminderMinutes === null ? [] : [form.defaultReminderMinutes])])].sort((a, b) => a - b).map((minutes) => (
              <option key={minutes} value={String(minutes)}>{minutes === 0 ? minutesName(0) : `${minutesName(minutes)} before`}</option>
            ))}
          </select>
        </div>
      </fieldset>
      <fieldset>
        <legend>Calendar colours</legend>
        {props.calendars.map((calendar, index) => {
          const color = form.calendarColors[calendar.key] ?? calendar.color
          const named = CALENDAR_PALETTE.some((entry) => entry.color === color)
          return (
            <div key={calendar.key} class='field color-choice' style={{ '--calendar': color }}>
              <label for={`pref-color-${index}`}>{calendar.name}{calendar.provider !== null && ` (${providerName(calendar.provider)})`}</label>
              <select id={`pref-color-${index}`} value={color} onChange={(input) => change({ calendarColors: { ...form.calendarColors, [calendar.key]: input.currentTarget.value } })}>
                {!named && <option value={color}>Custom</option>}
                {CALENDAR_PALETTE.map((entry) => <option key={entry.color} value={entry.color}>{entry.name}</option>)}
              </select>
            </div>
          )
        })}
      </fieldset>
      <fieldset>
        <legend>New events' reminder, by calendar</legend>
        {props.calendars.map((calendar, index) => {
          const minutes = form.calendarReminderMinutes[calendar.key]
          const choose = (value: string) => {
            const { [calendar.key]: _left, ...others } = form.calendarReminderMinutes
            change({ calendarReminderMinutes: value === '' ? others : { ...others, [calendar.key]: Number(value) } })
          }
          return (
            <div key={calendar.key} class='field'>
              <label for={`pref-calendar-reminder-${index}`}>Reminder in {calendar.name}{calendar.provider !== null && ` (${providerName(calendar.provider)})`}</label>
              <select id={`pref-calendar-reminder-${index}`} value={minutes === undefined ? '' : String(minutes)} onChange={(input) => choose(input.currentTarget.value)}>
                <option value=''>The default reminder</option>
                {[...new Set([...REMINDERS, ...(minutes === undefined ? [] : [minutes])])].sort((a, b) => a - b).map((value) => (
                  <option key={value} value={String(value)}>{value === 0 ? minutesName(0) : `${minutesName(value)} before`}</option>
                ))}
              </select>
            </div>
          )
        })}
      </fieldset>
      <div class='actions'>
        <button type='button' onClick={props.onClose}>Cancel</button>
        <button type='submit' class='primary' disabled={saving || (hours !== null && (hours.start >= hours.end || hours.days.length === 0))}>Save</button>
      </div>
    </form>
  )
}
