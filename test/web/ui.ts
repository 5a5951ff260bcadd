// What a person does in the web client, as steps the browser tests share.
import type { Page } from 'playwright-core'

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
export function eventBlock (page: Page, title: string) {
  return page.locator('.event-body', { hasText: title })
}

export async function eventTitles (page: Page): Promise<string[]> {
  return await page.locator('.event-title').allTextContents()
}
