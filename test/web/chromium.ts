// Which Chromium the browser tests drive and how it starts, apart from test/web/browser.ts so that
// the runner and the machine check can read it without loading tap.

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/** Flags that keep a machine without network quiet: no background services, no QUIC, no component updates. */
export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'
]

/**
 * Names the Playwright endpoint of the run's one Chromium (test/run.ts starts it when the run holds
 * browser files); a file run on its own starts a Chromium of its own.
 */
export const BROWSER_ENDPOINT_VARIABLE = 'CALENDAR_TEST_BROWSER_ENDPOINT'
