// Debian's Chromium driven by playwright-core. The flags keep a machine without network quiet:
// no background services, no QUIC, no component updates.
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import type { Teardown } from '../helper.js'

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'
]

export async function launchBrowser (t: Teardown): Promise<Browser> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true })
  t.teardown(() => browser.close())
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

/**
 * The page's own errors fail the test that reads them. `foreign` names addresses whose failures
 * are not the client's (another site's page the test passes through).
 */
export function collectErrors (page: Page, options: { foreign?: (url: string) => boolean } = {}): string[] {
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(error.message))
  page.on('console', (message) => {
    if (message.type() === 'error' && options.foreign?.(message.location().url) !== true) errors.push(message.text())
  })
  return errors
}
