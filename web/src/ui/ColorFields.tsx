// The event form's colour: the calendar's, or one of Google Calendar's eleven event colours
// (lib/events/colors.ts), as radio buttons: one tab stop, the arrow keys move between them, and
// each is named ("Tomato", "Calendar colour") for a screen reader and on hover.
import { EVENT_COLORS, type EventColor } from '../../../lib/events/colors.js'

function colorLabel (name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1)
}

export function ColorFields (props: { value: EventColor | undefined, calendarColor: string, onChange: (color: EventColor | undefined) => void }) {
  const choices = [{ name: undefined, hex: props.calendarColor, label: 'Calendar colour' }, ...EVENT_COLORS.map((entry) => ({ name: entry.name, hex: entry.hex, label: colorLabel(entry.name) }))]
  return (
    <fieldset class='colors'>
      <legend>Colour</legend>
      {choices.map((choice) => (
        <input
          key={choice.label} type='radio' name='event-color' class='swatch' aria-label={choice.label} title={choice.label}
          style={{ '--calendar': choice.hex }} checked={props.value === choice.name} onChange={() => props.onChange(choice.name)}
        />
      ))}
      <span class='hint' aria-hidden='true'>{props.value === undefined ? 'Calendar colour' : colorLabel(props.value)}</span>
    </fieldset>
  )
}
