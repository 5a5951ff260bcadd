// Quick add beside New event: "Lunch with Sam tomorrow 1pm" and Enter make the event, through the
// same create as the dialog's Save (kept and sent like any write, so offline it waits and is
// marked), with the reminders a new event starts with there. What the rule cannot read opens New
// event with the text as the title.
import { useState } from 'preact/hooks'
import { DateTime } from 'luxon'
import { draftOfQuickAdd, parseQuickAdd } from '../lib/quick-add.js'
import { newEventId } from '../lib/events.js'
import { planCreate } from '../lib/series-edit.js'
import { applyPlan, userZone } from '../data/calendar.js'
import { defaultCalendarOf, type ShownCalendar } from '../data/calendars.js'
import { preferences } from '../data/preferences.js'
import { newEventReminders } from '../lib/preferences.js'
import { inCalendar } from './EventDialog.js'
import './quick-add.css'

export function QuickAdd (props: { calendars: ShownCalendar[], onAdded: (start: DateTime, title: string) => void, onUnread: (title: string) => void }) {
  const [text, setText] = useState('')

  function submit (submitEvent: Event) {
    submitEvent.preventDefault()
    const typed = text.trim()
    if (typed === '') return
    setText('')
    const added = parseQuickAdd(typed, DateTime.now().setZone(userZone))
    if (added === null) {
      props.onUnread(typed)
      return
    }
    const calendar = defaultCalendarOf(props.calendars)
    const plan = inCalendar(planCreate(draftOfQuickAdd(added, userZone, newEventReminders(preferences.get(), calendar)), newEventId()), calendar)
    props.onAdded(added.start, added.title)
    applyPlan(plan).catch(() => {})
  }

  return (
    <form class='quick-add' onSubmit={submit}>
      <label for='quick-add-input' class='sr-only'>Quick add</label>
      <input
        id='quick-add-input' type='text' value={text} autocomplete='off' enterKeyHint='done'
        placeholder='Quick add: Lunch tomorrow 1pm' aria-describedby='quick-add-hint'
        onInput={(input) => setText((input.currentTarget as HTMLInputElement).value)}
      />
      <span id='quick-add-hint' class='sr-only'>Type an event with its day and time, for example Lunch with Sam tomorrow 1pm, then press Enter.</span>
      <button type='submit'>Add</button>
    </form>
  )
}
