// What a person does in the web client, as steps the browser tests share.
import type { Page } from 'playwright-core'
import { LATE_GRACE_MS, LOOKAHEAD_MS } from '../../web/src/lib/reminders.js'

/**
 * How long a test waits for what the page does after a click to reach the database or the screen.
 * Generous on purpose: a loaded machine sheds requests (503 with Retry-After: 5), which the client
 * waits out before sending again; how fast it happens is measured in bench/, never here.
 */
export const EVENTUALLY_MS = 15_000

export async function signUpThroughUi (page: Page, webUrl: string, user: { name: string, email: string, password: string }, path = '/day'): Promise<void> {
  await page.goto(`${webUrl}${path}${path.includes('?') ? '&' : '?'}auth=signup`)
  const dialog = page.getByRole('dialog', { name: 'Create your account' })
  await dialog.getByLabel('Name').fill(user.name)
  await dialog.getByLabel('Email').fill(user.email)
  await dialog.getByLabel('Password').fill(user.password)
  await dialog.getByRole('button', { name: 'Create account' }).click()
  await page.getByRole('banner').getByText(user.email, { exact: true }).waitFor()
}

/** The Google stand-in's consent page, answered as a person would: pick the account, press Allow. */
export async function consent (page: Page, googleUrl: string, email: string): Promise<void> {
  await page.waitForURL((url) => url.href.startsWith(`${googleUrl}/o/oauth2/v2/auth`))
  await page.getByLabel(email).check()
  await page.getByRole('button', { name: 'Allow' }).click()
}

/** Connects a CalDAV account from the toolbar's button and its dialog, and waits for the dialog to close. */
export async function connectCalDavThroughUi (page: Page, account: { url: string, user: string, password: string }): Promise<void> {
  await page.getByRole('button', { name: 'Connect CalDAV calendar' }).click()
  const dialog = page.getByRole('dialog', { name: 'Connect a CalDAV calendar' })
  await dialog.getByLabel('Server address').fill(account.url)
  await dialog.getByLabel('User name').fill(account.user)
  await dialog.getByLabel('App password').fill(account.password)
  await dialog.getByRole('button', { name: 'Connect' }).click()
  await dialog.waitFor({ state: 'hidden' })
}

export async function signInThroughUi (page: Page, user: { email: string, password: string }): Promise<void> {
  const dialog = page.getByRole('dialog', { name: 'Sign in' })
  await dialog.getByLabel('Email').fill(user.email)
  await dialog.getByLabel('Password').fill(user.password)
  await dialog.getByRole('button', { name: 'Sign in' }).click()
}

export interface EventInput {
  title: string
  day: string
  start?: string
  end?: string
  location?: string
  repeat?: 'DAILY' | 'WEEKLY' | 'MONTHLY' | 'YEARLY'
}

export async function createEventThroughUi (page: Page, event: EventInput): Promise<void> {
  await page.getByRole('button', { name: 'New event' }).click()
  const dialog = page.getByRole('dialog', { name: 'New event' })
  await dialog.getByLabel('Title').fill(event.title)
  await dialog.getByLabel('Start date').fill(event.day)
  await dialog.getByLabel('Start time').fill(event.start ?? '09:00')
  await dialog.getByLabel('End date').fill(event.day)
  await dialog.getByLabel('End time').fill(event.end ?? '10:00')
  if (event.location !== undefined) await dialog.getByLabel('Location').fill(event.location)
  if (event.repeat !== undefined) await dialog.getByLabel('Repeat').selectOption(event.repeat)
  await dialog.getByRole('button', { name: 'Save' }).click()
  await dialog.waitFor({ state: 'hidden' })
}

/** The event blocks of the grid whose visible text includes `title`. */
/** Every Notification a page constructs, recorded before the app's own code runs (an init script). */
export const RECORD_NOTIFICATIONS = `(() => {
  const Original = window.Notification
  window.__notifications = []
  class Recorded extends Original {
    constructor (title, options) {
      super(title, options)
      window.__notifications.push({ title, body: options && options.body, tag: options && options.tag })
    }
  }
  Object.defineProperty(Recorded, 'permission', { get: () => Original.permission })
  Recorded.requestPermission = (...args) => Original.requestPermission(...args)
  window.Notification = Recorded
})()`

/** The notifications the page showed so far (RECORD_NOTIFICATIONS). */
export async function shownNotifications (page: Page): Promise<Array<{ title: string, body: string, tag: string }>> {
  return await page.evaluate('window.__notifications') as Array<{ title: string, body: string, tag: string }>
}

/**
 * What the page shows and keeps now, for a failed step to say why: open dialogs, the undo toast,
 * notices, the status line, the focused element and the unsent writes in local storage.
 */
export async function pageState (page: Page): Promise<string> {
  return await page.evaluate(`JSON.stringify({
    dialogs: [...document.querySelectorAll('dialog[open]')].map((dialog) => dialog.textContent.slice(0, 200)),
    toast: document.querySelector('.undo-toast')?.textContent ?? null,
    notices: [...document.querySelectorAll('.notice')].map((notice) => notice.textContent),
    status: document.querySelector('.toolbar-end .status')?.textContent ?? null,
    focused: document.activeElement === null ? null : document.activeElement.tagName + '#' + document.activeElement.id + '.' + document.activeElement.className,
    pendingWrites: localStorage.getItem('pendingWrites')
  })`) as string
}

export function eventBlock (page: Page, title: string) {
  return page.locator('.event-body', { hasText: title })
}

/** The details card a click on an event opens (a dialog named by the event's title). */
export function detailsCard (page: Page) {
  return page.getByRole('dialog').filter({ has: page.locator('.event-details') })
}

/**
 * Opens an event's details card by clicking its block, as a person does: once more if the card does
 * not open, since a block that a live update draws again under the pointer takes the click with it.
 * `holdMs`: how long the button stays down (a person's click lasts about 100-150 ms).
 */
async function openDetails (page: Page, title: string, timeoutMs = 30_000, holdMs = 0) {
  const card = detailsCard(page)
  const until = Date.now() + timeoutMs
  for (;;) {
    await eventBlock(page, title).click({ timeout: Math.max(1, until - Date.now()), delay: holdMs })
    try {
      await card.waitFor({ timeout: Math.min(5_000, Math.max(1, until - Date.now())) })
      return card
    } catch (error) {
      if (Date.now() >= until) throw error
    }
  }
}

/** Opens an event's edit form as a person does: a click shows its details card, whose Edit opens the form. */
export async function openEvent (page: Page, title: string, timeoutMs = 30_000, holdMs = 0) {
  const card = await openDetails(page, title, timeoutMs, holdMs)
  await card.getByRole('button', { name: 'Edit', exact: true }).click()
  const dialog = page.getByRole('dialog', { name: 'Edit event' })
  await dialog.waitFor()
  return dialog
}

export async function eventTitles (page: Page): Promise<string[]> {
  return await page.locator('.event-title').allTextContents()
}

/**
 * A page's reads of GET /api/event (their query strings), the view's own apart from the one the
 * reminders make of the four weeks ahead at start (web/README, Reminders).
 */
export function apartFromReminders (searches: string[]): { view: string[], ahead: string[] } {
  const span = (search: string): number => {
    const query = new URLSearchParams(search)
    return Date.parse(query.get('end') ?? '') - Date.parse(query.get('start') ?? '')
  }
  const isAhead = (search: string): boolean => span(search) === LATE_GRACE_MS + LOOKAHEAD_MS
  return { view: searches.filter((search) => !isAhead(search)), ahead: searches.filter(isAhead) }
}
