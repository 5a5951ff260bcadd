// The event colours: Google's eleven in Google's colorId order, and each keeps an event's text
// readable (WCAG AA, 4.5:1) on its tint in light and dark mode, measured as the calendar palette's
// are (test/lib/preferences.test.ts): 22 % on white under dark text, 35 % on the dark page under light text.
import { test } from 'tap'
import { colorOfCss, colorOfGoogleId, EVENT_COLORS, googleColorIdOf } from '../../lib/events/colors.js'
import { EVENT_COLOR_NAMES } from '../../schemas/event-colors.js'

function channels (hex: string): number[] {
  return [1, 3, 5].map((start) => parseInt(hex.slice(start, start + 2), 16))
}
function luminance (rgb: number[]): number {
  const [r, g, b] = rgb.map((value) => {
    const c = value / 255
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
  }) as [number, number, number]
  return 0.2126 * r + 0.7152 * g + 0.0722 * b
}
function contrast (a: number[], b: number[]): number {
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number]
  return (light + 0.05) / (dark + 0.05)
}
function mix (color: string, share: number, paper: string): number[] {
  const [c, p] = [channels(color), channels(paper)]
  return c.map((value, index) => value * share + (p[index] as number) * (1 - share))
}

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
