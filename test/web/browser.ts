// Debian's Chromium driven by playwright-core.
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import tap from 'tap'
import type { Teardown } from '../helper.js'

import { BROWSER_ENDPOINT_VARIABLE, CHROMIUM, CHROMIUM_ARGS } from './chromium.js'

let processBrowser: Promise<Browser> | undefined

/**
 * The run's Chromium (test/run.ts starts one for all its processes), or, for a file run on its
 * own, the process's, started on first use. Every file uses it through contexts of its own
 * (separate cookies, storage, caches and service workers); what a caller opens is closed at its
 * teardown, as its own browser would be. The process lets go of the browser when its tests end.
 */
export async function launchBrowser (t: Teardown): Promise<Browser> {
  const endpoint = process.env[BROWSER_ENDPOINT_VARIABLE]
  processBrowser ??= (endpoint === undefined ? chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true }) : chromium.connect(endpoint)).then((browser) => {
    tap.teardown(() => browser.close())
    return browser
  })
  const browser = await processBrowser
  const before = new Set(browser.contexts())
  t.teardown(async () => { await Promise.all(browser.contexts().filter((context) => !before.has(context)).map(async (context) => { await context.close() })) })
  return browser
}

/** A fresh browser profile (its own cookies and storage), like another person or device. */
export async function newContext (browser: Browser, options: { timezoneId?: string, bypassCSP?: boolean } = {}): Promise<BrowserContext> {
  return await browser.newContext({
    timezoneId: options.timezoneId ?? 'Europe/Berlin',
    locale: 'en-GB',
    viewport: { width: 1280, height: 900 },
    ...(options.bypassCSP === true ? { bypassCSP: true } : {})
  })
}

export interface TabbedBrowser {
  browser: Browser
  /** The browser's own profile: its pages are tabs of one window. */
  context: BrowserContext
  /** The tab Chromium opened at start. */
  page: Page
}

/**
 * A Chromium whose tabs are hidden when another tab is in front, as in a desktop browser.
 * Playwright turns on focus emulation for every page it creates or launches, and Chromium counts
 * that as the tab being captured, which keeps `document.visibilityState` 'visible' in a background
 * tab or a minimised window. Connected over CDP with `noDefaults`, Playwright leaves the pages of
 * the browser's default profile as they are, so that profile's tabs get hidden and shown for real.
 * Its time zone and language are the browser's own, so they are set the way a user's are.
 */
export async function launchBrowserWithTabs (t: Teardown, options: { timezoneId?: string, locale?: string } = {}): Promise<TabbedBrowser> {
  const profile = await mkdtemp(join(tmpdir(), 'calendar-chromium-'))
  const child = spawn(CHROMIUM, [
    ...CHROMIUM_ARGS,
    '--remote-debugging-port=0', `--user-data-dir=${profile}`,
    `--accept-lang=${options.locale ?? 'en-GB'}`, '--window-size=1280,900', 'about:blank'
  ], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, TZ: options.timezoneId ?? 'Europe/Berlin' } })
  const exited = new Promise<void>((resolve) => { child.once('exit', () => resolve()) })
  const connected: { browser?: Browser } = {}
  // One teardown, so Playwright lets go of the browser before the process ends, whatever the order
  // of teardowns; it is registered first, so a failed start leaves no process behind either.
  t.teardown(async () => {
    await connected.browser?.close()
    if (child.exitCode === null && child.signalCode === null) child.kill()
    await exited
    // Chromium's helper processes can still write into the profile for a moment after it exits.
    await rm(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 })
  })
  const endpoint = await new Promise<string>((resolve, reject) => {
    let output = ''
    let listening = false
    const timer = setTimeout(() => reject(new Error(`Chromium named no DevTools endpoint within 30 s: ${output}`)), 30_000)
    // Read to the end: a full pipe would stall Chromium.
    child.stderr.on('data', (chunk: Buffer) => {
      if (listening) return
      output += chunk.toString()
      const match = /DevTools listening on (ws:\/\/\S+)/.exec(output)
      if (match?.[1] !== undefined) {
        listening = true
        clearTimeout(timer)
        resolve(match[1])
      }
    })
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`Chromium exited (${String(code)}) before it listened: ${output}`)) })
  })
  const browser = await chromium.connectOverCDP(endpoint, { noDefaults: true })
  connected.browser = browser
  const context = browser.contexts()[0]
  if (context === undefined) throw new Error('Chromium started without its default profile')
  const page = context.pages()[0] ?? await context.newPage()
  return { browser, context, page }
}

/**
 * The page's own errors fail the test that reads them. `foreign` names addresses whose failures
 * are not the client's (another site's page the test passes through).
 */
export function collectErrors (page: Page, options: { foreign?: (url: string) => boolean } = {}): string[] {
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(error.message))
  page.on('console', (message) => {
    if (message.type() !== 'error' || options.foreign?.(message.location().url) === true) return
    // A failed load names no address in its text: the address says which request it was.
    const text = message.text()
    errors.push(text.startsWith('Failed to load resource') ? `${text} (${message.location().url})` : text)
  })
  return errors
}
