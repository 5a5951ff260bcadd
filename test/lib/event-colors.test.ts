// The event colours: Google's eleven in Google's colorId order, and each keeps an event's text
// readable (WCAG AA, 4.5:1) on its tint in light and dark mode, measured as the calendar palette's
// are (test/lib/preferences.test.ts): 22 % on white under dark text, 35 % on the dark page under light text.
import { test } from 'tap'
import { channels, contrast, mix } from './contrast.js'
import { colorOfCss, colorOfGoogleId, EVENT_COLORS, googleColorIdOf } from '../../lib/events/colors.js'
import { EVENT_COLOR_NAMES } from '../../schemas/event-colors.js'

test('Google\'s eleven event colours, each readable on its tint in light and dark mode', async (t) => {
  t.same(EVENT_COLORS.map((entry) => entry.name), [...EVENT_COLOR_NAMES], 'the table holds the schema\'s names, in colorId order')
  t.same(EVENT_COLORS.map((entry) => entry.googleId), EVENT_COLOR_NAMES.map((_name, index) => String(index + 1)))
  t.same(EVENT_COLORS.map((entry) => `${entry.googleId}:${entry.name}`), ['1:lavender', '2:sage', '3:grape', '4:flamingo', '5:banana', '6:tangerine', '7:peacock', '8:graphite', '9:blueberry', '10:basil', '11:tomato'])
  t.equal(new Set(EVENT_COLORS.map((entry) => entry.hex)).size, EVENT_COLORS.length, 'no colour twice')
  for (const { name, hex, css } of EVENT_COLORS) {
    const light = contrast(mix(hex, 0.22, '#ffffff'), channels('#10192b'))
    const dark = contrast(mix(hex, 0.35, '#161c24'), channels('#eef2f7'))
    t.ok(light >= 4.5, `${name} (${hex}) light: ${light.toFixed(2)}`)
    t.ok(dark >= 4.5, `${name} (${hex}) dark: ${dark.toFixed(2)}`)
    t.equal(colorOfGoogleId(googleColorIdOf(name)), name)
    t.equal(colorOfCss(css.toUpperCase()), name)
  }
  t.equal(colorOfGoogleId('12'), undefined)
  t.equal(colorOfCss('tomato'), undefined, 'CSS tomato is no name written here (ours is red)')
})
