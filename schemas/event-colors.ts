// An event's own colour, by name: Google Calendar's eleven event colours as its UI names them, in the
// order of its colorId 1 to 11. What each is at Google, here and in CalDAV is lib/events/colors.ts.
// A file of its own, as both the event schema and the Sync contract read it.
export const EVENT_COLOR_NAMES = ['lavender', 'sage', 'grape', 'flamingo', 'banana', 'tangerine', 'peacock', 'graphite', 'blueberry', 'basil', 'tomato'] as const
export type EventColor = typeof EVENT_COLOR_NAMES[number]
