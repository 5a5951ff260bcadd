// An event's own colour: one of Google Calendar's eleven event colours, by the name Google's UI
// gives it. Absent, the event is drawn in its calendar's colour. One table says, for each, Google's
// `colorId` (the `event` palette of `colors.get`, ids 1 to 11), the colour drawn here (Google's own;
// each keeps event text at 4.5:1 on its tint, as the calendar palette does: test/lib/event-colors.test.ts)
// and the CSS3 colour name a CalDAV event's RFC 7986 COLOR carries (the nearest in CIELAB; no two alike).

import type { EventColor } from '../../schemas/event-colors.js'

export type { EventColor }

/** The schema's names (schemas/event-colors.ts) in the same order, each with what it is at Google, here and in CalDAV. */
export const EVENT_COLORS: ReadonlyArray<{ name: EventColor, googleId: string, hex: string, css: string }> = [
  { name: 'lavender', googleId: '1', hex: '#7986cb', css: 'cornflowerblue' },
  { name: 'sage', googleId: '2', hex: '#33b679', css: 'mediumseagreen' },
  { name: 'grape', googleId: '3', hex: '#8e24aa', css: 'darkmagenta' },
  { name: 'flamingo', googleId: '4', hex: '#e67c73', css: 'lightcoral' },
  { name: 'banana', googleId: '5', hex: '#f6bf26', css: 'goldenrod' },
  { name: 'tangerine', googleId: '6', hex: '#f4511e', css: 'orangered' },
  { name: 'peacock', googleId: '7', hex: '#039be5', css: 'deepskyblue' },
  { name: 'graphite', googleId: '8', hex: '#616161', css: 'dimgray' },
  { name: 'blueberry', googleId: '9', hex: '#3f51b5', css: 'slateblue' },
  { name: 'basil', googleId: '10', hex: '#0b8043', css: 'seagreen' },
  { name: 'tomato', googleId: '11', hex: '#d50000', css: 'red' }
]

/** Google's `colorId` of our colour. */
export function googleColorIdOf (color: EventColor): string {
  return (EVENT_COLORS.find((entry) => entry.name === color) as { googleId: string }).googleId
}

/** Our colour of Google's `colorId`; undefined for none or an id outside the palette. */
export function colorOfGoogleId (id: string | null | undefined): EventColor | undefined {
  return EVENT_COLORS.find((entry) => entry.googleId === id)?.name
}

/** The CSS3 colour name written as a VEVENT's COLOR. */
export function cssColorOf (color: EventColor): string {
  return (EVENT_COLORS.find((entry) => entry.name === color) as { css: string }).css
}

/** Our colour of a COLOR value: only the names written here (case aside; `dimgrey` is `dimgray`). */
export function colorOfCss (value: string | null | undefined): EventColor | undefined {
  const css = value?.trim().toLowerCase().replace(/grey$/, 'gray')
  return EVENT_COLORS.find((entry) => entry.css === css)?.name
}
