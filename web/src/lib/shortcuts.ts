// Single-key shortcuts in the style of Google Calendar: c create, t today, j/k (or the right and
// left arrows) next/previous, d/w/m views (x the 4-day view, Google's custom view; a the agenda), / search, ? the list.
// Nothing fires while the user types in a field, with a modifier held (Alt+arrows move an event,
// Ctrl/Cmd keys belong to the browser), or inside a dialog.

export type ShortcutAction = 'create' | 'today' | 'next' | 'previous' | 'day' | 'week' | 'month' | '4days' | 'agenda' | 'search' | 'help'

export const SHORTCUTS: ReadonlyArray<{ keys: readonly string[], action: ShortcutAction, description: string }> = [
  { keys: ['c'], action: 'create', description: 'Create an event' },
  { keys: ['t'], action: 'today', description: 'Go to today' },
  { keys: ['j', 'n', 'ArrowRight'], action: 'next', description: 'Next day, 4 days, week, month or 30 days of the agenda' },
  { keys: ['k', 'p', 'ArrowLeft'], action: 'previous', description: 'Previous day, 4 days, week, month or 30 days of the agenda' },
  { keys: ['d', '1'], action: 'day', description: 'Day view' },
  { keys: ['w', '2'], action: 'week', description: 'Week view' },
  { keys: ['m', '3'], action: 'month', description: 'Month view' },
  { keys: ['/'], action: 'search', description: 'Search events' },
  { keys: ['x'], action: '4days', description: '4-day view' },
  { keys: ['a'], action: 'agenda', description: 'Agenda: the coming events, day by day' },
  { keys: ['?'], action: 'help', description: 'Show these shortcuts' }
]

const BY_KEY = new Map(SHORTCUTS.flatMap((shortcut) => shortcut.keys.map((key) => [key, shortcut.action] as const)))

/** What the key press is for the shortcut handler, from its target as the DOM describes it. */
export interface KeyPress {
  key: string
  altKey: boolean
  ctrlKey: boolean
  metaKey: boolean
  /** The target is (inside) an input, a text area, a select or editable content. */
  typing: boolean
  /** The target is inside an open dialog. */
  inDialog: boolean
  /** The target uses the arrow keys itself (a radio group, a slider, ...). */
  arrowsTaken?: boolean
}

export function shortcutFor (press: KeyPress): ShortcutAction | null {
  if (press.typing || press.inDialog || press.altKey || press.ctrlKey || press.metaKey) return null
  if (press.key.startsWith('Arrow') && press.arrowsTaken === true) return null
  // Caps lock or a held Shift (other than for "?") still mean the letter.
  const key = press.key.length === 1 && press.key !== '?' ? press.key.toLowerCase() : press.key
  return BY_KEY.get(key) ?? null
}

/** The key as it is written in the list of shortcuts. */
export function keyName (key: string): string {
  return key === 'ArrowRight' ? '→' : key === 'ArrowLeft' ? '←' : key
}
